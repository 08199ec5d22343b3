import type { ExpressionBuilder, Kysely } from 'kysely';
import { compilePatterns } from '../events/pattern-matcher.js';
import type { Tables } from '../storage/tables.js';

/** Which stored events a replay or a purge works on. */
export interface EventSelector {
  /** Types or patterns (`order.*`); absent or empty: every type. */
  types?: readonly string[] | undefined;
  /** `timestamp >= start` */
  start?: string | undefined;
  /** `timestamp <= end` */
  end?: string | undefined;
  /** `timestamp < before` */
  before?: string | undefined;
  correlationId?: string | undefined;
  statuses?: readonly string[] | undefined;
  /** Only events already stored when the operation began. */
  upToSequence?: number | undefined;
}

const CHUNK = 500;

/** Counts and pages the events a selector picks, in sequence order. */
export class EventSelection {
  constructor(private readonly db: Kysely<Tables>) {}

  async count(selector: EventSelector): Promise<number> {
    const types = await this.resolveTypes(selector.types);
    if (types?.length === 0) return 0;
    const row = await this.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => where(eb, selector, types))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Up to `limit` events after `afterSequence`, in sequence order, with what a replay needs of them. */
  async page(selector: EventSelector, afterSequence: number, limit: number, types?: string[] | undefined) {
    if (types?.length === 0) return [];
    const rows = await this.db
      .selectFrom('events')
      .select([
        'event_id',
        'sequence',
        'event_type',
        'source',
        'priority',
        'security_level',
        'emitter_id',
        'data',
        'data_encrypted',
      ])
      .where((eb) => where(eb, selector, types))
      .where('sequence', '>', afterSequence)
      .orderBy('sequence', 'asc')
      .limit(limit)
      .execute();
    for (const r of rows) r.sequence = Number(r.sequence);
    return rows;
  }

  /** Ids of up to `limit` selected events, oldest first. */
  async ids(selector: EventSelector, limit: number, types?: string[] | undefined): Promise<string[]> {
    if (types?.length === 0) return [];
    const rows = await this.db
      .selectFrom('events')
      .select('event_id')
      .where((eb) => where(eb, selector, types))
      .orderBy('sequence', 'asc')
      .limit(limit)
      .execute();
    return rows.map((r) => r.event_id);
  }

  /**
   * The stored types the patterns match, or undefined for "every type". Patterns do not map onto SQL LIKE on
   * both dialects (SQLite's LIKE ignores case; `_` is a type character), so they are tested on the distinct
   * stored types instead.
   */
  async resolveTypes(patterns: readonly string[] | undefined): Promise<string[] | undefined> {
    if (!patterns || patterns.length === 0) return undefined;
    const matcher = compilePatterns(patterns);
    const rows = await this.db.selectFrom('events').select('event_type').distinct().execute();
    return rows.map((r) => r.event_type).filter(matcher);
  }

  /**
   * Deletes events with everything that hangs off them (outbox rows, attempts, audit entries). After each chunk
   * commits, `onLeased` is told those of its events that had deliveries under a dispatcher's lease (claimed,
   * maybe not yet sent), so the dispatchers holding them let them go.
   */
  async delete(ids: readonly string[], onLeased?: (eventIds: string[]) => Promise<void>): Promise<number> {
    let deleted = 0;
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      const { count, leased } = await this.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('delivery_attempts').where('event_id', 'in', chunk).execute();
        await trx.deleteFrom('event_audit').where('event_id', 'in', chunk).execute();
        // The status as deleted: a claim that locked a row first (PostgreSQL) has leased it by then.
        const outbox = await trx
          .deleteFrom('event_outbox')
          .where('event_id', 'in', chunk)
          .returning(['event_id', 'status'])
          .execute();
        const result = await trx.deleteFrom('events').where('event_id', 'in', chunk).executeTakeFirst();
        const leased = new Set(outbox.filter((r) => r.status === 'delivering').map((r) => r.event_id));
        return { count: Number(result.numDeletedRows), leased: [...leased] };
      });
      deleted += count;
      if (leased.length > 0) await onLeased?.(leased);
    }
    return deleted;
  }
}

function where(eb: ExpressionBuilder<Tables, 'events'>, s: EventSelector, types: string[] | undefined) {
  const all = [];
  if (types !== undefined) all.push(eb('event_type', 'in', types));
  if (s.start !== undefined) all.push(eb('timestamp', '>=', s.start));
  if (s.end !== undefined) all.push(eb('timestamp', '<=', s.end));
  if (s.before !== undefined) all.push(eb('timestamp', '<', s.before));
  if (s.correlationId !== undefined) all.push(eb('correlation_id', '=', s.correlationId));
  if (s.statuses !== undefined && s.statuses.length > 0) all.push(eb('status', 'in', [...s.statuses]));
  if (s.upToSequence !== undefined) all.push(eb('sequence', '<=', s.upToSequence));
  return eb.and(all);
}
