import type { ExpressionBuilder, Kysely, Selectable } from 'kysely';
import type { Tables } from '../storage/tables.js';
import { type AuditEntry, deliveryAuditEntry } from './delivery-audit.js';
import type { EventsTable } from './event-tables.js';
import { compilePattern } from './pattern-matcher.js';

export type EventRow = Selectable<EventsTable>;

export interface EventQuery {
  eventType?: string | undefined;
  source?: string | undefined;
  startTime?: string | undefined;
  endTime?: string | undefined;
  correlationId?: string | undefined;
  priority?: number | undefined;
  status?: string | undefined;
  sort: 'timestamp' | 'priority' | 'event_type';
  order: 'asc' | 'desc';
  page: number;
  perPage: number;
  now: string;
  /** Non-admin readers see confidential events only when they emitted them. */
  reader: { userId: string; isAdmin: boolean };
}

/** Reads of stored events: by id, by sequence range (stream backfill), and filtered pages. */
export class EventStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async findById(id: string): Promise<EventRow | undefined> {
    return this.db.selectFrom('events').selectAll().where('event_id', '=', id).executeTakeFirst();
  }

  async sequenceOf(id: string): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('events')
      .select('sequence')
      .where('event_id', '=', id)
      .executeTakeFirst();
    return row ? Number(row.sequence) : undefined;
  }

  /** The last committed event, or undefined when there is none. */
  async last(): Promise<{ sequence: number; event_id: string } | undefined> {
    const row = await this.db
      .selectFrom('events')
      .select(['sequence', 'event_id'])
      .orderBy('sequence', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? { sequence: Number(row.sequence), event_id: row.event_id } : undefined;
  }

  /** The earliest expiry still ahead of `now`, or null when no stored event expires later. */
  async nextExpiry(now: string): Promise<string | null> {
    const row = await this.db
      .selectFrom('events')
      .select((eb) => eb.fn.min('expires_at').as('next'))
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row?.next ?? null;
  }

  /** Events after `after` in sequence order, at most `limit`, optionally only up to `upTo`. */
  async range(after: number, limit: number, upTo?: number): Promise<EventRow[]> {
    let q = this.db
      .selectFrom('events')
      .selectAll()
      .where('sequence', '>', after)
      .orderBy('sequence', 'asc')
      .limit(limit);
    if (upTo !== undefined) q = q.where('sequence', '<=', upTo);
    const rows = await q.execute();
    for (const r of rows) r.sequence = Number(r.sequence);
    return rows;
  }

  async query(q: EventQuery): Promise<{ rows: EventRow[]; total: number }> {
    const types = q.eventType?.includes('*') ? await this.typesMatching(q.eventType) : undefined;
    if (types && types.length === 0) return { rows: [], total: 0 };
    const where = (eb: ExpressionBuilder<Tables, 'events'>) => {
      const all = [eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', q.now)])];
      if (types) all.push(eb('event_type', 'in', types));
      else if (q.eventType !== undefined) all.push(eb('event_type', '=', q.eventType));
      if (q.source !== undefined) all.push(eb('source', '=', q.source));
      if (q.startTime !== undefined) all.push(eb('timestamp', '>=', q.startTime));
      if (q.endTime !== undefined) all.push(eb('timestamp', '<=', q.endTime));
      if (q.correlationId !== undefined) all.push(eb('correlation_id', '=', q.correlationId));
      if (q.priority !== undefined) all.push(eb('priority', '=', q.priority));
      if (q.status !== undefined) all.push(eb('status', '=', q.status));
      if (!q.reader.isAdmin) {
        all.push(eb.or([eb('security_level', '!=', 'confidential'), eb('emitter_id', '=', q.reader.userId)]));
      }
      return eb.and(all);
    };
    const countRow = await this.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(where)
      .executeTakeFirst();
    let rowsQuery = this.db.selectFrom('events').selectAll().where(where).orderBy(q.sort, q.order);
    if (q.sort !== 'timestamp') rowsQuery = rowsQuery.orderBy('timestamp', q.order);
    const rows = await rowsQuery
      .orderBy('sequence', q.order)
      .limit(q.perPage)
      .offset((q.page - 1) * q.perPage)
      .execute();
    return { rows, total: Number(countRow?.n ?? 0) };
  }

  /**
   * The stored types a wildcard pattern matches. Pattern segments do not map onto SQL LIKE on both dialects
   * (SQLite's LIKE ignores case; `_` is a type character), so the pattern is tested on the distinct types.
   */
  private async typesMatching(pattern: string): Promise<string[]> {
    const matcher = compilePattern(pattern);
    const rows = await this.db.selectFrom('events').select('event_type').distinct().execute();
    return rows.map((r) => r.event_type).filter(matcher);
  }

  /**
   * An event's deliveries: outbox rows counted by status, and every attempt. With `ownerId` (a reader who is
   * not an admin), only those of the subscriptions that owner has now: subscriptions belong to their creator.
   */
  async deliveries(eventId: string, ownerId?: string) {
    let outbox = this.db
      .selectFrom('event_outbox')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('event_id', '=', eventId)
      // Replayed deliveries show among the attempts but are not subscribers of the event.
      .where('replay_id', 'is', null);
    let attempts = this.db.selectFrom('delivery_attempts').selectAll().where('event_id', '=', eventId);
    if (ownerId !== undefined) {
      const owned = this.db.selectFrom('subscriptions').select('id').where('owner_id', '=', ownerId);
      outbox = outbox.where('subscription_id', 'in', owned);
      attempts = attempts.where('subscription_id', 'in', owned);
    }
    const [counted, tried] = await Promise.all([
      outbox.groupBy('status').execute(),
      attempts.orderBy('created_at', 'asc').orderBy('id', 'asc').execute(),
    ]);
    const counts: Record<string, number> = {};
    for (const o of counted) counts[o.status] = Number(o.n);
    return { counts, attempts: tried };
  }

  /**
   * The stored part of an event's audit trail, oldest first: its `event_audit` rows and the entries its
   * delivery attempts stand for (migration 0013).
   */
  async auditTrail(eventId: string): Promise<AuditEntry[]> {
    const [rows, attempts] = await Promise.all([
      this.db.selectFrom('event_audit').selectAll().where('event_id', '=', eventId).execute(),
      this.db
        .selectFrom('delivery_attempts')
        .selectAll()
        .where('event_id', '=', eventId)
        .where('actor', 'is not', null)
        .execute(),
    ]);
    const entries: AuditEntry[] = rows.map((r) => ({
      id: r.id,
      timestamp: r.timestamp,
      action: r.action,
      actor: r.actor,
      details: JSON.parse(r.details) as Record<string, unknown>,
    }));
    for (const a of attempts) {
      const entry = deliveryAuditEntry(a);
      if (entry) entries.push(entry);
    }
    // Ids sort by time after their prefix (`aud_`, `att_`), which orders entries of the same millisecond.
    return entries.sort(
      (a, b) => compare(a.timestamp, b.timestamp) || compare(unprefixed(a.id), unprefixed(b.id)),
    );
  }

  async pendingOutbox(): Promise<number> {
    const row = await this.db
      .selectFrom('event_outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', 'in', ['pending', 'delivering'])
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const unprefixed = (id: string) => id.slice(id.indexOf('_') + 1);
