import { performance } from 'node:perf_hooks';
import type { Compilable, ExpressionBuilder, Kysely } from 'kysely';
import { type EventReader, readableBy } from '../events/event-data.js';
import { MERGED_TYPES_MAX } from '../events/event-store.js';
import { compilePatterns } from '../events/pattern-matcher.js';
import { minutesKeptFrom } from '../events/rollup-compaction.js';
import { typeSeeks } from '../events/type-seeks.js';
import type { BulkWrites } from '../storage/bulk-writes.js';
import type { Dialect } from '../storage/database.js';
import { retryOnConflict } from '../storage/retry-on-conflict.js';
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
  /** Only the events this reader may read (`readableBy`, the SQL form of `mayRead`). */
  reader?: EventReader | undefined;
}

/** Bounds of the events deleted per transaction (`EventSelection.delete`), which aims at CHUNK_TARGET_MS. */
const CHUNK_START = 100;
const CHUNK_MIN = 10;
const CHUNK_MAX = 500;
const CHUNK_TARGET_MS = 15;

/** Where a purge's scan of the events stands: the last event it looked at. */
export interface WindowCursor {
  timestamp: string;
  sequence: number;
}

/** Counts and pages the events a selector picks, in sequence order. */
export class EventSelection {
  constructor(
    /** Where its reads go (Database.reads): none needs to see a transaction's writes. */
    private readonly reads: Kysely<Tables>,
    private readonly dialect: Dialect,
    /** How the deleting chunks commit: on SQLite, without syncing on the server's thread (bulkWrites). */
    private readonly writes: BulkWrites,
  ) {}

  async count(selector: EventSelector): Promise<number> {
    const types = await this.resolveTypes(selector.types);
    if (types?.length === 0) return 0;
    if (onlyBefore(selector)) return this.countBefore(selector.before, types);
    // Grows with the matches: off the server's thread.
    const row = await this.reads
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => where(eb, selector, types))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /**
   * Events emitted before `before` (of `types`), from the roll-ups: the hours before its hour, the minutes of its
   * hour before its minute, and the events of its minute by the timestamp index. Never a scan of the events.
   * An hour whose minutes were compacted (rollup-compaction.ts) has no minute rows: its events before `before`
   * are counted by the timestamp index instead (at most that hour's events).
   */
  private async countBefore(before: string, types: readonly string[] | undefined): Promise<number> {
    const hour = before.slice(0, 13);
    const kept = await minutesKeptFrom(this.reads);
    const minute = kept !== undefined && hour < kept ? `${hour}:00` : before.slice(0, 16);
    const rolled = (span: 'm' | 'h') => {
      let q = this.reads
        .selectFrom('event_rollups')
        .select((eb) => eb.fn.sum<number | string | null>('event_count').as('n'))
        .where('span', '=', span);
      if (types !== undefined) {
        q = q.where('key_id', 'in', (eb) =>
          eb
            .selectFrom('event_rollup_keys')
            .select('id')
            .where('event_type', 'in', [...types]),
        );
      }
      return span === 'h'
        ? q.where('bucket', '<', hour)
        : q.where('bucket', '>=', hour).where('bucket', '<', minute);
    };
    let edge = this.reads
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('timestamp', '>=', `${minute}:00.000Z`)
      .where('timestamp', '<', before);
    if (types !== undefined) edge = edge.where('event_type', 'in', [...types]);
    const rows = await Promise.all([
      rolled('h').executeTakeFirst(),
      rolled('m').executeTakeFirst(),
      edge.executeTakeFirst(),
    ]);
    return rows.reduce((n, r) => n + Number(r?.n ?? 0), 0);
  }

  /**
   * Up to `limit` events after `cursor`, in (timestamp, sequence) order, with what a replay needs of them. On
   * `reads`: with a filter few events match, a walk visits more rows than it returns.
   */
  async page(
    selector: EventSelector,
    cursor: WindowCursor | undefined,
    limit: number,
    types?: string[] | undefined,
  ) {
    if (types?.length === 0) return [];
    const rows = await this.pageQuery(selector, cursor, limit, types).execute();
    for (const r of rows) r.sequence = Number(r.sequence);
    return rows;
  }

  /**
   * The statement of `page` (of resolved `types`). Public so that a test can show its plan. Each page reads about
   * `limit` index entries per arm past its cursor, however far the job has gone: a cursor on the sequence alone,
   * with `event_type in (…)`, had the databases read every remaining match of the window and sort it for each
   * page (a job's reads grew with the square of its events). Here each type is one arm read in order from its
   * index (`events_list_type`: type, timestamp, sequence), limited to the page, and the arms are merged, as a
   * pattern's list page is (event-store.ts). With no types (or more than MERGED_TYPES_MAX), one statement in the
   * same order, which the time index serves.
   */
  pageQuery(
    selector: EventSelector,
    cursor: WindowCursor | undefined,
    limit: number,
    types: string[] | undefined,
  ) {
    const columns = [
      'event_id',
      'timestamp',
      'sequence',
      'event_type',
      'source',
      'priority',
      'security_level',
      'emitter_id',
      'data',
      'data_encrypted',
    ] as const;
    const after = (eb: ExpressionBuilder<Tables, 'events'>) =>
      cursor === undefined
        ? eb.and([])
        : eb.and([
            eb('timestamp', '>=', cursor.timestamp),
            eb.or([eb('timestamp', '>', cursor.timestamp), eb('sequence', '>', cursor.sequence)]),
          ]);
    const matching = (arm: string[] | undefined) =>
      this.reads
        .selectFrom('events')
        .select(columns)
        .where((eb) => eb.and([where(eb, selector, arm), after(eb)]));
    const ordered = (arm: string[] | undefined) =>
      matching(arm).orderBy('timestamp', 'asc').orderBy('sequence', 'asc').limit(limit);
    if (types === undefined || types.length < 2 || types.length > MERGED_TYPES_MAX) return ordered(types);
    // PostgreSQL merges the arms (Merge Append) only when each is ordered and limited; SQLite merges plain arms
    // (MERGE (UNION ALL)), pulling from each only as far as the page needs.
    const limited = (type: string) => this.reads.selectFrom(ordered([type]).as('arm')).selectAll('arm');
    const arm = (type: string) =>
      this.dialect === 'postgres'
        ? limited(type)
        : (matching([type]) as unknown as ReturnType<typeof limited>);
    let arms = arm(types[0]!);
    for (const type of types.slice(1)) arms = arms.unionAll(arm(type));
    return arms.orderBy('timestamp', 'asc').orderBy('sequence', 'asc').limit(limit);
  }

  /**
   * The next `limit` events emitted before `before`, after `cursor`, in (timestamp, sequence) order, with what a
   * purge tests them on: read by the timestamp index, each call costs `limit` rows however many are stored (up
   * to 10,000: on `reads`, off the server's thread). The chunks deleted before the call have committed, so a
   * reader sees them gone.
   */
  async window(before: string, cursor: WindowCursor | undefined, limit: number) {
    let q = this.reads
      .selectFrom('events')
      .select(['event_id', 'timestamp', 'sequence', 'event_type', 'status'])
      .where('timestamp', '<', before);
    if (cursor) {
      q = q
        .where('timestamp', '>=', cursor.timestamp)
        .where((eb) => eb.or([eb('timestamp', '>', cursor.timestamp), eb('sequence', '>', cursor.sequence)]));
    }
    const rows = await q.orderBy('timestamp', 'asc').orderBy('sequence', 'asc').limit(limit).execute();
    for (const r of rows) r.sequence = Number(r.sequence);
    return rows;
  }

  /**
   * The stored types the patterns match, or undefined for "every type". Patterns do not map onto SQL LIKE on
   * both dialects (SQLite's LIKE ignores case; `_` is a type character), so they are tested on the distinct
   * stored types, found by a seek per type in the type index (`typeSeeks`), on `reads`: the cost follows the
   * number of types, never the number of events or of hours stored.
   */
  async resolveTypes(patterns: readonly string[] | undefined): Promise<string[] | undefined> {
    if (!patterns || patterns.length === 0) return undefined;
    const matcher = compilePatterns(patterns);
    const { rows } = await typeSeeks(this.dialect).execute(this.reads);
    return rows.map((r) => r.event_type).filter(matcher);
  }

  /**
   * Events per deleting transaction, adapted to how long the last one took: on SQLite a transaction holds the
   * server's thread while it runs, so each aims at CHUNK_TARGET_MS (with the roll-up triggers and the rows
   * hanging off the events, the cost per event varies with the machine and the store).
   */
  private chunk = CHUNK_START;

  private adapt(size: number, ms: number): void {
    const next = ms <= 0 ? size * 2 : Math.round((size * CHUNK_TARGET_MS) / ms);
    this.chunk = Math.max(CHUNK_MIN, Math.min(CHUNK_MAX, next, size * 2));
  }

  /**
   * Deletes events with everything that hangs off them (outbox rows, attempts, audit entries), a chunk per
   * transaction (sized to take about CHUNK_TARGET_MS), yielding to other work between chunks (the roll-ups
   * follow in the same transactions, by trigger). On SQLite the chunks commit without syncing on the server's
   * thread, and the WAL is synced off it once they all have (`BulkWrites`): resolved, the deletion is on disk.
   * After each chunk commits, `onLeased` is told those of its events that had deliveries under a dispatcher's
   * lease (claimed, maybe not yet sent), so the dispatchers holding them let them go. With `purgeId`, the count
   * of that purge (`event_purge_progress`) grows in the transaction of each chunk.
   */
  async delete(
    ids: readonly string[],
    onLeased?: (eventIds: string[]) => Promise<void>,
    purgeId?: string,
  ): Promise<number> {
    let deleted = 0;
    let size = this.chunk;
    for (let i = 0; i < ids.length; i += size) {
      if (i > 0) await new Promise((r) => setImmediate(r));
      size = this.chunk;
      const chunk = ids.slice(i, i + size);
      const started = performance.now();
      // A delivery's result being written for the same events can deadlock with it (PostgreSQL aborts one):
      // the chunk is run again, as a whole.
      const { count, leased } = await retryOnConflict(async () => {
        // `reads` only builds the statements (the same SQL dialect); `writes.batch` runs them, on SQLite on the
        // bulk writer's thread.
        const q = this.reads;
        const statements: Compilable[] = [
          q.deleteFrom('delivery_attempts').where('event_id', 'in', chunk),
          q.deleteFrom('event_audit').where('event_id', 'in', chunk),
          // The status as deleted: a claim that locked a row first (PostgreSQL) has leased it by then.
          q.deleteFrom('event_outbox').where('event_id', 'in', chunk).returning(['event_id', 'status']),
          q.deleteFrom('events').where('event_id', 'in', chunk),
        ];
        // With `purgeId`, the purge's count grows in the chunk's transaction. Its statement needs the chunk's
        // count, known only inside: every event of the chunk that is still there, counted by the same key.
        if (purgeId !== undefined) {
          statements.splice(
            3,
            0,
            q
              .insertInto('event_purge_progress')
              .columns(['purge_id', 'events_purged', 'updated_at'])
              .expression((eb) =>
                eb
                  .selectFrom('events')
                  .select([
                    eb.val(purgeId).as('purge_id'),
                    eb.fn.countAll<number>().as('events_purged'),
                    eb.val(new Date().toISOString()).as('updated_at'),
                  ])
                  .where('event_id', 'in', chunk),
              )
              .onConflict((oc) =>
                oc.column('purge_id').doUpdateSet((eb) => ({
                  events_purged: eb(
                    'event_purge_progress.events_purged',
                    '+',
                    eb.ref('excluded.events_purged'),
                  ),
                  updated_at: eb.ref('excluded.updated_at'),
                })),
              ),
          );
        }
        const results = await this.writes.batch(statements);
        const outbox = (results[2]?.rows ?? []) as { event_id: string; status: string }[];
        const leased = new Set(outbox.filter((r) => r.status === 'delivering').map((r) => r.event_id));
        return { count: Number(results.at(-1)?.numAffectedRows ?? 0), leased: [...leased] };
      });
      deleted += count;
      this.adapt(chunk.length, performance.now() - started);
      if (leased.length > 0) await onLeased?.(leased);
    }
    await this.writes.sync();
    return deleted;
  }
}

/** A selector of events before an instant (and of types), nothing else: what the roll-ups can count. */
function onlyBefore(s: EventSelector): s is EventSelector & { before: string } {
  return (
    s.before !== undefined &&
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(s.before) &&
    s.start === undefined &&
    s.end === undefined &&
    s.correlationId === undefined &&
    (s.statuses === undefined || s.statuses.length === 0) &&
    s.upToSequence === undefined &&
    s.reader === undefined
  );
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
  const readable = s.reader === undefined ? undefined : readableBy(eb, s.reader);
  if (readable) all.push(readable);
  return eb.and(all);
}
