import type { Kysely } from 'kysely';
import type { Tables } from '../storage/tables.js';
import type { FailedLoginStore } from './failed-login-store.js';
import type { ScanStore } from './scan-store.js';
import type { SecurityAlerts } from './security-alerts.js';
import { scanView } from './security-scanner.js';

const DAY_MS = 86_400_000;

/**
 * The security overview, every figure counted from storage:
 * - `failed_logins_24h`: failed logins recorded in the last 24 hours;
 * - `blocked_ips`: block rules in force (not expired);
 * - `active_sessions`: sessions neither revoked nor expired;
 * - `api_key_usage`: requests ever authenticated by an API key (sum of the keys' usage counters, which the
 *   auth service writes every few seconds), with `api_keys_used_24h` and `active_api_keys` beside it.
 * `status`: `critical` with an unresolved critical alert or a critical finding in the last scan; `warning`
 * with any unresolved alert or a high or medium finding in the last scan; else `secure`.
 */
export async function securityStatus(deps: {
  db: Kysely<Tables>;
  alerts: SecurityAlerts;
  scans: ScanStore;
  failedLogins: FailedLoginStore;
}) {
  const { db } = deps;
  const now = new Date();
  const nowIso = now.toISOString();
  const dayAgo = new Date(now.getTime() - DAY_MS).toISOString();
  const [failed, blocked, sessions, keys, open, last] = await Promise.all([
    deps.failedLogins.countSince(dayAgo),
    db
      .selectFrom('blocked_ips')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', nowIso)]))
      .executeTakeFirst(),
    db
      .selectFrom('sessions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', nowIso)
      .executeTakeFirst(),
    db
      .selectFrom('api_keys')
      .select((eb) => [
        eb.fn.sum<number>('usage_count').as('uses'),
        eb.fn.count<number>(eb.case().when('last_used', '>=', dayAgo).then(1).end()).as('used_24h'),
        eb.fn
          .count<number>(
            eb
              .case()
              .when(
                eb.and([
                  eb('revoked_at', 'is', null),
                  eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', nowIso)]),
                ]),
              )
              .then(1)
              .end(),
          )
          .as('active'),
      ])
      .executeTakeFirst(),
    deps.alerts.list({ status: 'unresolved', limit: 50, offset: 0 }),
    deps.scans.lastCompleted(),
  ]);
  const lastScan = last ? scanView(last) : undefined;
  const severities = new Set(open.alerts.map((a) => a.severity));
  const found = lastScan?.summary.by_severity;
  const status =
    severities.has('critical') || (found?.critical ?? 0) > 0
      ? 'critical'
      : open.total > 0 || (found?.high ?? 0) > 0 || (found?.medium ?? 0) > 0
        ? 'warning'
        : 'secure';
  return {
    status,
    last_scan: lastScan?.completed_at ?? null,
    last_scan_id: lastScan?.scan_id ?? null,
    last_scan_findings: found ?? null,
    open_alerts: open.total,
    alerts: open.alerts,
    metrics: {
      failed_logins_24h: failed,
      blocked_ips: Number(blocked?.n ?? 0),
      active_sessions: Number(sessions?.n ?? 0),
      api_key_usage: Number(keys?.uses ?? 0),
      api_keys_used_24h: Number(keys?.used_24h ?? 0),
      active_api_keys: Number(keys?.active ?? 0),
    },
  };
}
