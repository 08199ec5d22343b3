import type { Kysely, Selectable } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';
import type { SecurityAlertsTable } from './security-tables.js';

export type AlertRow = Selectable<SecurityAlertsTable>;
export type AlertSeverity = 'low' | 'medium' | 'high' | 'critical';
export type AlertStatus = 'open' | 'acknowledged' | 'resolved';

export interface NewAlert {
  type: string;
  severity: AlertSeverity;
  title: string;
  description: string;
  affectedResources: string[];
  metadata: Record<string, unknown>;
  /** While an alert with this key is unresolved, raising it again counts an occurrence instead of a new alert. */
  dedupeKey: string;
}

export interface AlertFilter {
  status?: AlertStatus | 'unresolved' | undefined;
  severity?: AlertSeverity | undefined;
  type?: string | undefined;
  limit: number;
  offset: number;
}

/** Security alerts (`alr_…`). */
export class AlertStore {
  constructor(private readonly db: Kysely<Tables>) {}

  /**
   * Inserts the alert, or, when an unresolved one with the same key exists, adds an occurrence to it.
   * The unique `open_key` makes this hold across instances. Returns the row and whether it is new.
   */
  async raise(alert: NewAlert): Promise<{ row: AlertRow; created: boolean }> {
    const now = nowIso();
    const id = newId('alr');
    await this.db
      .insertInto('security_alerts')
      .values({
        id,
        type: alert.type,
        severity: alert.severity,
        title: alert.title,
        description: alert.description,
        status: 'open',
        affected_resources: JSON.stringify(alert.affectedResources),
        metadata: JSON.stringify(alert.metadata),
        open_key: alert.dedupeKey,
        occurrences: 1,
        created_at: now,
        updated_at: now,
        acknowledged_at: null,
        acknowledged_by: null,
        resolved_at: null,
        resolved_by: null,
        note: '',
      })
      .onConflict((oc) =>
        oc.column('open_key').doUpdateSet((eb) => ({
          occurrences: eb('security_alerts.occurrences', '+', 1),
          updated_at: now,
          description: alert.description,
          metadata: JSON.stringify(alert.metadata),
        })),
      )
      .execute();
    const row = await this.db
      .selectFrom('security_alerts')
      .selectAll()
      .where('open_key', '=', alert.dedupeKey)
      .executeTakeFirstOrThrow();
    return { row, created: row.id === id };
  }

  findById(id: string): Promise<AlertRow | undefined> {
    return this.db.selectFrom('security_alerts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async list(filter: AlertFilter): Promise<{ rows: AlertRow[]; total: number }> {
    let q = this.db.selectFrom('security_alerts');
    if (filter.status === 'unresolved') q = q.where('status', '!=', 'resolved');
    else if (filter.status) q = q.where('status', '=', filter.status);
    if (filter.severity) q = q.where('severity', '=', filter.severity);
    if (filter.type) q = q.where('type', '=', filter.type);
    const total = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const rows = await q
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(filter.limit)
      .offset(filter.offset)
      .execute();
    return { rows, total: Number(total?.n ?? 0) };
  }

  /** Acknowledges or resolves; a resolved alert frees its key, so the rule can raise a fresh one. */
  async setStatus(id: string, status: 'acknowledged' | 'resolved', by: string, note?: string): Promise<void> {
    const now = nowIso();
    await this.db
      .updateTable('security_alerts')
      .set({
        status,
        updated_at: now,
        ...(status === 'acknowledged'
          ? { acknowledged_at: now, acknowledged_by: by }
          : { resolved_at: now, resolved_by: by, open_key: null }),
        ...(note !== undefined ? { note } : {}),
      })
      .where('id', '=', id)
      .execute();
  }
}
