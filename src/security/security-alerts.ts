import { AppError, notFound } from '../http/app-error.js';
import type { EventOrigin, PlatformEvents } from '../kernel/platform-events.js';
import type { AlertFilter, AlertRow, AlertStore, NewAlert } from './alert-store.js';

export function alertView(row: AlertRow) {
  return {
    id: row.id,
    type: row.type,
    severity: row.severity,
    title: row.title,
    message: row.title,
    description: row.description,
    timestamp: row.created_at,
    status: row.status,
    affected_resources: JSON.parse(row.affected_resources) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    occurrences: row.occurrences,
    updated_at: row.updated_at,
    acknowledged_at: row.acknowledged_at,
    acknowledged_by: row.acknowledged_by,
    resolved_at: row.resolved_at,
    resolved_by: row.resolved_by,
    note: row.note,
  };
}

export type AlertView = ReturnType<typeof alertView>;

/**
 * Raises, lists and closes security alerts. A new alert is announced as a `security.alert` platform event;
 * a repeat of an unresolved one only counts an occurrence, so a running attack does not flood subscribers.
 */
export class SecurityAlerts {
  raisedCount = 0;

  constructor(
    private readonly store: AlertStore,
    private readonly events: PlatformEvents,
  ) {}

  /** `origin`: the request that caused the alert (a failed login, a block), carried by `security.alert`. */
  async raise(alert: NewAlert, origin?: EventOrigin): Promise<AlertView> {
    const { row, created } = await this.store.raise(alert);
    const view = alertView(row);
    if (created) {
      this.raisedCount += 1;
      this.events.announce(
        'security.alert',
        'system',
        {
          alert_id: view.id,
          type: view.type,
          severity: view.severity,
          title: view.title,
          description: view.description,
          affected_resources: view.affected_resources,
        },
        { origin },
      );
    }
    return view;
  }

  async list(filter: AlertFilter) {
    const { rows, total } = await this.store.list(filter);
    return { alerts: rows.map(alertView), total };
  }

  async get(id: string): Promise<AlertView> {
    const row = await this.store.findById(id);
    if (!row) throw notFound('alert', id);
    return alertView(row);
  }

  /** open → acknowledged → resolved (or open → resolved). A resolved alert stays resolved. */
  async transition(
    id: string,
    status: 'acknowledged' | 'resolved',
    by: string,
    note?: string,
  ): Promise<{ before: AlertView; after: AlertView }> {
    const before = await this.get(id);
    if (before.status === 'resolved' || (before.status === 'acknowledged' && status === 'acknowledged')) {
      throw new AppError('RESOURCE_CONFLICT', `Alert '${id}' is already ${before.status}`, {
        details: { id, status: before.status, requested: status },
      });
    }
    await this.store.setStatus(id, status, by, note);
    return { before, after: await this.get(id) };
  }
}
