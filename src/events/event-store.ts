import {
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type QueryCreator,
  type Selectable,
  type SqlBool,
  sql,
} from 'kysely';
import type { Dialect } from '../storage/database.js';
import type { Tables } from '../storage/tables.js';
import {
  SKIP_EXPIRED_MAX,
  SKIP_FROM,
  SKIP_ROW,
  SKIP_TARGET,
  skipBound,
  skipped,
  skipResidual,
  skipTarget,
} from './deep-page-skip.js';
import { type AuditEntry, deliveryAuditEntry } from './delivery-audit.js';
import { type EventReader, readableBy } from './event-data.js';
import type { EventsTable } from './event-tables.js';
import { canonicalPattern, compilePattern } from './pattern-matcher.js';
import { typeSeeks } from './type-seeks.js';

export type EventRow = Selectable<EventsTable>;

/**
 * How far past the page a list's `total` counts: exact below it, a lower bound at it. 10,000 index entries
 * are a few milliseconds to count, and leave 500 pages of 20 ahead of the reader.
 */
export const TOTAL_LOOKAHEAD = 10_000;

/** Stands for every type in what typesMatching answers (`*`, `**`): not a type, whose segments have no `*`. */
const ALL_TYPES = '*';

/** Up to this many types, a pattern's page is read by merging one ordered arm per type (`mergedPage`). */
export const MERGED_TYPES_MAX = 64;

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
  /** Only the events this reader may read (`mayRead`) are listed and counted. */
  reader: EventReader;
}

/** Reads of stored events: by id, by sequence range (stream backfill), and filtered pages. */
export class EventStore {
  constructor(
    private readonly db: Kysely<Tables>,
    /** Where reads that grow with the store run (Database.reads): lists, their counts, audit trails. */
    private readonly reads: Kysely<Tables>,
    private readonly dialect: Dialect,
  ) {}

  async findById(id: string): Promise<EventRow | undefined> {
    return this.db.selectFrom('events').selectAll().where('event_id', '=', id).executeTakeFirst();
  }

  /** The event emitted under an Idempotency-Key (`idempotencyRef`): one indexed read. */
  async findByIdempotencyRef(ref: string, since: string): Promise<EventRow | undefined> {
    return this.db
      .selectFrom('events')
      .selectAll()
      .where('idempotency_ref', '=', ref)
      .where('timestamp', '>=', since)
      .executeTakeFirst();
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

  /**
   * A page of events and how many match. On `reads` (Database.reads): the count and a deep page read as many
   * index entries as they pass, which on SQLite would hold the server's thread. Every filter has an index in
   * the list's order (migration 0016), so page 1 reads its rows and no more. The count stops at
   * TOTAL_LOOKAHEAD events past the page: `totalExact` is false when it stopped there, and `total` is then
   * that many (a lower bound), so counting costs at most the page's depth plus the lookahead, never the store.
   * A deep page in time order skips its depth from the roll-ups instead (`skipTarget`): the page and the count
   * then read from the bucket where the offset lands, and the same rows and `total` come out.
   */
  async query(q: EventQuery): Promise<{ rows: EventRow[]; total: number; totalExact: boolean }> {
    const list = await this.listQueries(q);
    if (!list) return { rows: [], total: 0, totalExact: true };
    const [countRow, rows] = await Promise.all([list.count.executeTakeFirst(), list.rows.execute()]);
    const total = Number(countRow?.n ?? 0);
    return { rows, total, totalExact: total < list.countLimit };
  }

  /**
   * The two statements of a page of `query`: its rows and its capped count (undefined when a pattern matches
   * no stored type). Public so that a test can show their query plans.
   */
  async listQueries(q: EventQuery) {
    const types = q.eventType?.includes('*') ? await this.typesMatching(q.eventType) : undefined;
    if (types && types.length === 0) return undefined;
    const some = types && !types.includes(ALL_TYPES) ? types : undefined;
    /** The list's conditions but expiry; `type` in place of the pattern's types, for one arm of a merged page. */
    const kept = (type?: string) => (eb: ExpressionBuilder<Tables, 'events'>) => {
      const all: Expression<SqlBool>[] = [];
      // All types (`*`, `**`) is no condition.
      if (type !== undefined) all.push(eb('event_type', '=', type));
      else if (some) all.push(eb('event_type', 'in', some));
      else if (!types && q.eventType !== undefined) all.push(eb('event_type', '=', q.eventType));
      if (q.source !== undefined) all.push(eb('source', '=', q.source));
      if (q.startTime !== undefined) all.push(eb('timestamp', '>=', q.startTime));
      if (q.endTime !== undefined) all.push(eb('timestamp', '<=', q.endTime));
      if (q.correlationId !== undefined) all.push(eb('correlation_id', '=', q.correlationId));
      if (q.priority !== undefined) all.push(eb('priority', '=', q.priority));
      if (q.status !== undefined) all.push(eb('status', '=', q.status));
      const readable = readableBy(eb, q.reader);
      if (readable) all.push(readable);
      return eb.and(all);
    };
    /** The list's conditions (`kept`, and not expired); `type` as for `kept`. */
    const where = (type?: string) => (eb: ExpressionBuilder<Tables, 'events'>) =>
      eb.and([eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', q.now)]), kept(type)(eb)]);
    const offset = (q.page - 1) * q.perPage;
    const countLimit = offset + q.perPage + TOTAL_LOOKAHEAD;
    // A deep page in time order starts at the roll-ups' bucket where its offset lands (`skipTarget`).
    const merged = some && some.length > 1 && some.length <= MERGED_TYPES_MAX && q.sort === 'timestamp';
    const skip = (await this.skippable(q, offset))
      ? skipTarget(
          this.reads,
          { eventType: types ? undefined : q.eventType, types: some, source: q.source, reader: q.reader },
          kept(),
          q.order,
          offset,
          q.now,
        )
      : undefined;
    // The walk is a CTE of both statements: each reads its counts and its rows in one snapshot.
    const reads: QueryCreator<Tables> = skip
      ? (this.reads.with(
          (cte) => cte(SKIP_TARGET).materialized(),
          () => skip,
        ) as unknown as QueryCreator<Tables>)
      : this.reads;
    // A merged page on SQLite reads the bucket from the walk's row, joined once (`mergedPage`); every other
    // statement by a subquery.
    const joined = skip !== undefined && merged === true && this.dialect === 'sqlite';
    const listed = skip
      ? (type?: string) => (eb: ExpressionBuilder<Tables, 'events'>) =>
          eb.and([where(type)(eb), skipBound(q.order, joined && type !== undefined)])
      : where;
    const from = skip ? skipResidual(offset) : offset;
    // The capped count: with a skip, the events before its bucket and those counted from it up to the cap.
    const matched = this.reads
      .selectFrom('events')
      .select(sql.lit(1).as('one'))
      .where(listed())
      .limit(skip ? sql<number>`${countLimit} - ${skipped()}` : countLimit)
      .as('matched');
    const count = reads
      .selectFrom(matched)
      .select((eb) => (skip ? sql<number>`${skipped()} + count(*)` : eb.fn.countAll<number>()).as('n'));
    /** With a skip, how many arms of a merged page start at the walk's bucket (0: none or one statement). */
    const skippedArms = skip && merged ? some.length : 0;
    if (merged) {
      return {
        count,
        rows: this.mergedPage(reads, some, listed, q.order, q.perPage, offset, from, joined),
        countLimit,
        skippedArms,
      };
    }
    const columns = q.sort === 'timestamp' ? (['timestamp'] as const) : ([q.sort, 'timestamp'] as const);
    let keys = this.reads
      .selectFrom('events')
      .select(['sequence', ...columns])
      .where(listed())
      .orderBy(q.sort, q.order);
    if (q.sort !== 'timestamp') keys = keys.orderBy('timestamp', q.order);
    // The rows skipped by a deep page are read from the index alone (their keys), not whole (PostgreSQL read
    // every skipped row from the table: seconds at page 5,000); only the page's rows are read whole.
    const page = keys.orderBy('sequence', q.order).limit(q.perPage).offset(from).as('page');
    let rows = reads
      .selectFrom(page)
      .innerJoin('events', 'events.sequence', 'page.sequence')
      .selectAll('events')
      .orderBy(`page.${q.sort}`, q.order);
    if (q.sort !== 'timestamp') rows = rows.orderBy('page.timestamp', q.order);
    return { count, rows: rows.orderBy('page.sequence', q.order), countLimit, skippedArms };
  }

  /**
   * Whether a page is read from the roll-ups' bucket where it starts (`skipTarget`): in time order, deep enough,
   * with only filters the roll-ups' keys hold (type or pattern, source, the reader's visibility), with few
   * enough events expired but not yet deleted (the walk subtracts them one by one; counted from their index),
   * and fewer hour roll-ups than the offset (the walk reads every one: a store of many types and sources over
   * many hours could hold more of them than the entries the page would skip).
   */
  private async skippable(q: EventQuery, offset: number) {
    if (q.sort !== 'timestamp' || offset < SKIP_FROM) return false;
    if (q.startTime !== undefined || q.endTime !== undefined) return false;
    if (q.correlationId !== undefined || q.priority !== undefined || q.status !== undefined) return false;
    const expired = this.reads
      .selectFrom('events')
      .select(sql.lit(1).as('one'))
      .where('expires_at', '<=', q.now)
      .limit(SKIP_EXPIRED_MAX)
      .as('expired');
    const hours = this.reads
      .selectFrom('event_rollups')
      .select(sql.lit(1).as('one'))
      .where('span', '=', 'h')
      .limit(offset)
      .as('hours');
    const row = await this.reads
      .selectNoFrom((eb) => [
        eb.selectFrom(expired).select(eb.fn.countAll<number>().as('n')).as('expired'),
        eb.selectFrom(hours).select(eb.fn.countAll<number>().as('n')).as('hours'),
      ])
      .executeTakeFirst();
    return Number(row?.expired ?? 0) < SKIP_EXPIRED_MAX && Number(row?.hours ?? 0) < offset;
  }

  /**
   * A page of several types in time order. With `event_type in (…)` the databases read every match of every
   * type and sort them before skipping to the page (half a second for page 500 of `shop5.**` at a million
   * events). Here each type is one arm read in order from its index (`events_list_type`: type, timestamp,
   * sequence), the arms are merged (SQLite: MERGE (UNION ALL), PostgreSQL: Merge Append), and the skipped
   * rows are read from the index alone (`timestamp`, `sequence`); only the page's rows are then read whole.
   * The same rows as the plain query, in the same order (`sequence` is unique).
   *
   * `joined` (a deep page on SQLite, skipped to by the roll-ups): the arms start at the walk's bucket, read
   * from the walk's one row joined once (`SKIP_ROW`), and the page is the events whose `sequence` is in the
   * merged keys' page, sorted (they are at most `perPage`). An arm reading the bucket by a subquery of its own
   * would expand the walk once per arm, and SQLite refuses a statement of that many cursors (`SKIP_ROW`).
   */
  private mergedPage(
    reads: QueryCreator<Tables>,
    types: readonly string[],
    where: (type: string) => (eb: ExpressionBuilder<Tables, 'events'>) => Expression<SqlBool>,
    order: 'asc' | 'desc',
    perPage: number,
    offset: number,
    /** Where the page starts among the merged keys: `offset`, or less it the rows a skip passed over. */
    from: number | Expression<number>,
    joined: boolean,
  ) {
    const keysOf = (type: string) =>
      this.reads.selectFrom('events').select(['timestamp', 'sequence']).where(where(type));
    // PostgreSQL's planner merges the arms only when each is ordered and limited (else it sorts them all: 0.8 s
    // where the merge takes 0.2 s at a million events); no arm gives more than the page's end. SQLite merges
    // plain arms (its subquery is flattened into the arm).
    const arm = (type: string) =>
      this.reads
        .selectFrom(
          (this.dialect === 'postgres'
            ? keysOf(type)
                .orderBy('timestamp', order)
                .orderBy('sequence', order)
                .limit(offset + perPage)
            : keysOf(type)
          ).as('arm'),
        )
        .select(['arm.timestamp', 'arm.sequence']);
    let keys = arm(types[0]!);
    for (const type of types.slice(1)) keys = keys.unionAll(arm(type));
    const page = keys
      .orderBy('timestamp', order)
      .orderBy('sequence', order)
      .limit(perPage)
      .offset(from)
      .as('page');
    if (joined) {
      // The arms refer to the walk's row of the statement around them (SQLite has no LATERAL): the keys are
      // an IN subquery of it, read once for its one row, and the events are found by `sequence`.
      return reads
        .selectFrom(sql.table(SKIP_TARGET).as(SKIP_ROW))
        .crossJoin('events')
        .where('events.sequence', 'in', (eb) => eb.selectFrom(page).select('page.sequence'))
        .selectAll('events')
        .orderBy('events.timestamp', order)
        .orderBy('events.sequence', order);
    }
    return reads
      .selectFrom(page)
      .innerJoin('events', 'events.sequence', 'page.sequence')
      .selectAll('events')
      .orderBy('page.timestamp', order)
      .orderBy('page.sequence', order);
  }

  /** The stored types a wildcard pattern matches (`typeSeeks`: a seek per stored type, on `reads`). */
  private async typesMatching(pattern: string): Promise<string[]> {
    if (pattern === '*' || canonicalPattern(pattern) === '**') return [ALL_TYPES];
    const { rows } = await this.typeSeeks(pattern).execute(this.reads);
    return rows.map((r) => r.event_type).filter(compilePattern(pattern));
  }

  /** The statement of typesMatching: the distinct stored types in the pattern's range. Public for its plan. */
  typeSeeks(pattern: string) {
    return typeSeeks(this.dialect, pattern);
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
    // Only the attempts of deliveries that still exist: deleting a subscription (a plugin uninstalled or
    // updated without it) removes its deliveries as if never queued, and the figures must agree with the list.
    let attempts = this.db
      .selectFrom('delivery_attempts')
      .selectAll()
      .where('event_id', '=', eventId)
      .where('outbox_id', 'in', (eb) =>
        eb.selectFrom('event_outbox').select('id').where('event_id', '=', eventId),
      );
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
    // A replayed or often retried event gathers attempts without bound: read off the server's thread.
    const [rows, attempts] = await Promise.all([
      this.reads.selectFrom('event_audit').selectAll().where('event_id', '=', eventId).execute(),
      this.reads
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
