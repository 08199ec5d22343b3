import type { FastifyBaseLogger } from 'fastify';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { PlatformEventMap, PlatformEvents } from '../kernel/platform-events.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { FailedLoginStore } from './failed-login-store.js';
import type { SecurityAlerts } from './security-alerts.js';
import { ServerErrorRule } from './server-error-rule.js';

type PlatformEvent = PlatformEventMap['platform.event'];

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/** `*`, or a whole area such as `auth:*`. */
const isWildcard = (permission: string) => permission === '*' || permission.endsWith(':*');

/**
 * The `security_monitor` service: listens to the platform's own events, stores every failed login, and raises
 * alerts by rule — brute force on one account or from one address (N failures in M minutes, config
 * `security.*`), a new administrator, a plugin installed with wildcard permissions, many 5xx responses
 * across the cluster.
 */
export class SecurityMonitor implements PlatformService {
  readonly name = 'security_monitor';
  readonly type = 'security';
  readonly dependencies: readonly string[] = ['database'];
  private unsubscribe: (() => void) | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<Promise<void>>();
  private readonly counts = { failed_logins_recorded: 0, events_handled: 0, rule_errors: 0 };
  private lastError: string | undefined;
  private readonly serverErrors: ServerErrorRule;

  constructor(
    private readonly deps: {
      events: PlatformEvents;
      failedLogins: FailedLoginStore;
      alerts: SecurityAlerts;
      shared: SharedState;
      config: () => PlatformConfig;
      log: FastifyBaseLogger;
    },
  ) {
    this.serverErrors = new ServerErrorRule(deps);
  }

  async start(): Promise<void> {
    this.unsubscribe = this.deps.events.on('platform.event', (event) => this.track(this.handle(event)));
    this.pruneTimer = setInterval(() => this.track(this.prune()), 3_600_000);
    this.pruneTimer.unref();
    this.track(this.prune());
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
    await Promise.allSettled([...this.pending]);
  }

  async health(): Promise<ServiceHealth> {
    return {
      status: this.unsubscribe ? 'healthy' : 'unhealthy',
      checks: [
        { name: 'event_listener', status: this.unsubscribe ? 'pass' : 'fail' },
        {
          name: 'rules',
          status: this.counts.rule_errors === 0 ? 'pass' : 'warning',
          errors: this.counts.rule_errors,
          ...(this.lastError ? { last_error: this.lastError } : {}),
        },
      ],
    };
  }

  metrics(): Record<string, number> {
    return { ...this.counts, alerts_raised: this.deps.alerts.raisedCount, in_flight: this.pending.size };
  }

  settings(): Record<string, unknown> {
    return { ...this.deps.config().security };
  }

  private track(work: Promise<void>): void {
    const guarded = work.catch((err: unknown) => {
      this.counts.rule_errors += 1;
      this.lastError = (err as Error).message;
      this.deps.log.warn({ component: 'security', err }, 'security rule failed');
    });
    this.pending.add(guarded);
    void guarded.finally(() => this.pending.delete(guarded));
  }

  private async handle(event: PlatformEvent): Promise<void> {
    switch (event.type) {
      case 'auth.login_failed':
        return this.onLoginFailed(event);
      case 'user.created':
        return this.onNewAdmin(event, strings(event.data['roles']).includes('admin'));
      case 'user.updated':
        return this.onNewAdmin(
          event,
          strings(event.data['roles']).includes('admin') &&
            !strings(event.data['previous_roles']).includes('admin'),
        );
      case 'plugin.installed':
      case 'plugin.updated':
        return this.onPlugin(event);
    }
  }

  private async onLoginFailed(event: PlatformEvent): Promise<void> {
    this.counts.events_handled += 1;
    const username = text(event.data['username']) ?? '';
    const ip = text(event.data['ip_address']) ?? '';
    await this.deps.failedLogins.record({
      username,
      userId: text(event.data['user_id']) ?? null,
      ipAddress: ip,
      reason: text(event.data['reason']) ?? 'invalid_credentials',
    });
    this.counts.failed_logins_recorded += 1;
    const cfg = this.deps.config().security;
    const since = new Date(Date.now() - cfg.brute_force_window_minutes * 60_000).toISOString();
    const onAccount = await this.deps.failedLogins.countSince(since, { username });
    if (username && onAccount >= cfg.brute_force_account_threshold) {
      await this.deps.alerts.raise(
        {
          type: 'brute_force_account',
          severity: 'high',
          title: `Repeated failed logins on account '${username}'`,
          description: `${onAccount} failed logins for '${username}' within ${cfg.brute_force_window_minutes} minutes (threshold ${cfg.brute_force_account_threshold}).`,
          affectedResources: [`user:${username}`],
          metadata: {
            username,
            user_id: text(event.data['user_id']) ?? null,
            failed_attempts: onAccount,
            window_minutes: cfg.brute_force_window_minutes,
            last_ip_address: ip,
          },
          dedupeKey: `brute_force_account:${username}`,
        },
        event.origin,
      );
    }
    const fromIp = ip ? await this.deps.failedLogins.countSince(since, { ipAddress: ip }) : 0;
    if (ip && fromIp >= cfg.brute_force_ip_threshold) {
      const usernames = await this.deps.failedLogins.usernamesFrom(ip, since);
      await this.deps.alerts.raise(
        {
          type: 'brute_force_ip',
          severity: 'high',
          title: `Repeated failed logins from ${ip}`,
          description: `${fromIp} failed logins from ${ip} within ${cfg.brute_force_window_minutes} minutes across ${usernames.length} account(s) (threshold ${cfg.brute_force_ip_threshold}).`,
          affectedResources: [`ip:${ip}`],
          metadata: {
            ip_address: ip,
            failed_attempts: fromIp,
            window_minutes: cfg.brute_force_window_minutes,
            usernames_tried: usernames,
          },
          dedupeKey: `brute_force_ip:${ip}`,
        },
        event.origin,
      );
    }
  }

  private async onNewAdmin(event: PlatformEvent, becameAdmin: boolean): Promise<void> {
    if (!becameAdmin) return;
    this.counts.events_handled += 1;
    const username = text(event.data['username']) ?? '?';
    const userId = text(event.data['user_id']) ?? '';
    const by = event.actor?.username ?? 'the platform';
    await this.deps.alerts.raise(
      {
        type: event.type === 'user.created' ? 'new_admin_user' : 'admin_role_granted',
        severity: 'medium',
        title:
          event.type === 'user.created'
            ? `New administrator '${username}' created`
            : `Administrator role granted to '${username}'`,
        description: `${by} gave '${username}' the admin role. Confirm this was intended.`,
        affectedResources: [`user:${username}`],
        metadata: { user_id: userId, username, actor: by, request_id: event.requestId ?? null },
        dedupeKey: `new_admin:${userId}:${event.requestId ?? Date.now()}`,
      },
      event.origin,
    );
  }

  private async onPlugin(event: PlatformEvent): Promise<void> {
    const permissions = strings(event.data['permissions']);
    const wide = permissions.filter(isWildcard);
    if (wide.length === 0) return;
    this.counts.events_handled += 1;
    const plugin =
      text(event.data['plugin_id']) ?? text(event.data['name']) ?? event.source.replace(/^plugin:/, '');
    const version = text(event.data['version']) ?? '';
    await this.deps.alerts.raise(
      {
        type: 'plugin_wildcard_permissions',
        severity: 'high',
        title: `Plugin '${plugin}' has wildcard permissions`,
        description: `Plugin '${plugin}'${version ? ` ${version}` : ''} was ${event.type === 'plugin.installed' ? 'installed' : 'updated'} with permissions ${wide.join(', ')}, which grant every operation of their area.`,
        affectedResources: [`plugin:${plugin}`],
        metadata: { plugin_id: plugin, version, permissions, wildcard_permissions: wide },
        dedupeKey: `plugin_wildcard:${plugin}`,
      },
      event.origin,
    );
  }

  /** Counts a response (onResponse hook) for the `server_errors` rule; see ServerErrorRule. */
  observeResponse(status: number): void {
    if (status < 500 || !this.unsubscribe) return;
    this.track(this.serverErrors.observe(status));
  }

  private async prune(): Promise<void> {
    const days = this.deps.config().security.failed_login_retention_days;
    await this.deps.failedLogins.prune(new Date(Date.now() - days * 86_400_000).toISOString());
  }
}
