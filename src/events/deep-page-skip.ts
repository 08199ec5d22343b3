import {
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type RawBuilder,
  type SqlBool,
  sql,
} from 'kysely';
import type { Tables } from '../storage/tables.js';
import { type EventReader, readableBy } from './event-data.js';
import type { EventRow } from './event-store.js';

/** Below this offset a page skips its rows with OFFSET alone: the walk of the roll-ups would save too little. */
export const SKIP_FROM = 5_000;

/**
 * At most this many stored events past their expiry (not yet deleted) for a deep page to be skipped to: the
 * roll-ups count them and the walk subtracts them, reading each. Past it the page is read with OFFSET alone.
 */
export const SKIP_EXPIRED_MAX = 1_000;

/** What a skippable list selects by: the keys of the roll-ups (migration 0015) and nothing else. */
export interface SkipFilter {
  /** One type; undefined with `types` undefined: every type. */
  eventType?: string | undefined;
  /** The types of a pattern (typesMatching). */
  types?: readonly string[] | undefined;
  source?: string | undefined;
  reader: EventReader;
}

/** The list's conditions on the events, without the one on `expires_at`. */
export type EventConditions = (eb: ExpressionBuilder<Tables, 'events'>) => Expression<SqlBool>;

/** The CTE a skipped page reads: the bucket its page starts in (null past the list's end) and the events before it. */
export const SKIP_TARGET = 'skip_target';

/**
 * Where a deep page of a list in time order starts, from the roll-ups (`event_rollups`): the walk sums the
 * list's events per hour from its start (the reader's visibility is on the roll-ups' keys: type, level, and
 * the emitter of confidential events), less those expired but not yet deleted, to the hour where `offset`
 * lands; within it, per minute when every minute of the hour is still kept (compaction deletes them in
 * batches: the minutes' sum equals the hour's only when all are there). One row: `bucket` (the hour or minute
 * where the page starts; null when `offset` is past the list's end) and `skip`, the list's events before it
 * (all of them past the end). The page is then read from `bucket` on (`skipBound`) with OFFSET `offset - skip`:
 * at most one bucket's entries instead of `offset`. A CTE of the page's own statement, so the counts and the
 * rows are one snapshot.
 */
export function skipTarget(
  reads: Kysely<Tables>,
  filter: SkipFilter,
  conditions: EventConditions,
  order: 'asc' | 'desc',
  offset: number,
  now: string,
): RawBuilder<{ bucket: string | null; skip: number }> {
  const dir = sql.raw(order);
  const rolled = (span: 'h' | 'm') =>
    reads
      .selectFrom(
        reads
          .selectFrom('event_rollups')
          .innerJoin('event_rollup_keys as k', 'k.id', 'event_rollups.key_id')
          // readableBy's columns: `emitter_key` is the emitter of a confidential event (else '').
          .select([
            'bucket',
            'k.event_type',
            'k.source',
            'k.security_level',
            'k.emitter_key as emitter_id',
            'event_count',
          ])
          .where('span', '=', span)
          .as('r'),
      )
      .where((eb) => rollupConditions(eb as unknown as ExpressionBuilder<Tables, 'events'>, filter));
  const sums = (span: 'h' | 'm', within?: RawBuilder<unknown>) => {
    let q = rolled(span).select(['bucket', sql<number>`sum(event_count)`.as('n')]);
    if (within) q = q.where(within as unknown as Expression<SqlBool>);
    return q.groupBy('bucket');
  };
  // The expired events from their index (`events_expires_at`) alone, then the list's conditions on them: a
  // planner left to choose might read the list's whole index for its type instead.
  const expired = reads
    .selectFrom('events')
    .select(['timestamp', 'event_type', 'source', 'security_level', 'emitter_id'])
    .where('expires_at', '<=', now);
  const gone = reads
    .selectFrom(sql<EventRow>`skip_expired`.as('expired'))
    .select('timestamp')
    .where(conditions as never);
  const hourMinutes = sql`bucket between (select bucket from skip_hour) || ':00' and (select bucket from skip_hour) || ':59'`;
  const net = (span: 'h' | 'm', of: Expression<unknown>) =>
    sql`select x.bucket, x.n - coalesce((select g.n from ${sql.raw(`skip_gone_${span}`)} g where g.bucket = x.bucket), 0) as n
      from ${of} x`;
  return sql<{ bucket: string | null; skip: number }>`
    (with skip_expired as materialized ${expired},
    skip_gone as materialized ${gone},
    skip_gone_h as materialized (select substr(timestamp, 1, 13) as bucket, count(*) as n from skip_gone group by 1),
    skip_gone_m as materialized (select substr(timestamp, 1, 16) as bucket, count(*) as n from skip_gone group by 1),
    skip_hours as (
      select bucket, n, sum(n) over (order by bucket ${dir} rows unbounded preceding) as cum
      from (${net('h', sums('h'))}) h
    ),
    skip_hour as (
      select bucket, cum - n as skip from skip_hours where cum > ${offset} order by bucket ${dir} limit 1
    ),
    skip_minutes as (
      select bucket, n, sum(n) over (order by bucket ${dir} rows unbounded preceding) as cum
      from (${net('m', sums('m', hourMinutes))}) m
      where (select sum(n) from ${sums('m', hourMinutes)} a)
        = (select sum(n) from ${sums('h', sql`bucket = (select bucket from skip_hour)`)} b)
    ),
    skip_minute as (
      select bucket, cum - n as skip from skip_minutes
      where cum > ${offset} - (select skip from skip_hour) order by bucket ${dir} limit 1
    )
    select coalesce(m.bucket, h.bucket) as bucket,
      cast(coalesce(h.skip + coalesce(m.skip, 0), (select coalesce(max(cum), 0) from skip_hours)) as bigint) as skip
    from (select 1 as one) o
      left join skip_hour h on 1 = 1
      left join skip_minute m on 1 = 1)`;
}

/**
 * The alias of the walk's one row where a statement joins it (`from skip_target skip_row`) instead of reading
 * its bucket by a subquery in each condition. SQLite expands every reference to a CTE anew, with the CTEs it
 * reads (materialized or not: the copies are coded once, but each takes its cursors), and since 3.54
 * (better-sqlite3 13, Node 22 and later) it refuses a statement that has 1,000 cursors (SQLITE_LIMIT_EXPR_DEPTH,
 * its build's maximum) when it expands a CTE reference: "VIEWs and/or subqueries nested too deep". The walk is
 * some 100 cursors, so a merged page (`EventStore.mergedPage`) whose arms each read the bucket by a subquery
 * was refused from 10 arms on; joined once, the walk is expanded twice whatever the arms (here and in the
 * page's OFFSET), and SQLite's 500 terms of a compound select bound the arms first.
 */
export const SKIP_ROW = 'skip_row';

/**
 * The condition that starts a list at the walk's bucket: in ascending order every event of the bucket and
 * later (its timestamp has the bucket as prefix: it sorts at or after it), in descending order every event of
 * the bucket and earlier (`Z` follows the bucket's last character in every timestamp of it, `:`, in byte order
 * and sorts after digits in the collations: the bound is past each of them and before the next bucket).
 * `joined`: the bucket is the column of the walk's row joined to the statement (`SKIP_ROW`), not a subquery.
 */
export function skipBound(order: 'asc' | 'desc', joined = false): RawBuilder<SqlBool> {
  const bucket = joined ? sql.ref(`${SKIP_ROW}.bucket`) : sql`(select bucket from ${sql.table(SKIP_TARGET)})`;
  return order === 'asc'
    ? sql<SqlBool>`${sql.ref('timestamp')} >= ${bucket}`
    : sql<SqlBool>`${sql.ref('timestamp')} < (${bucket} || 'Z')`;
}

/** The list's events the skipped page passes over within its bucket: `offset` less the walk's `skip`. */
export function skipResidual(offset: number): RawBuilder<number> {
  return sql<number>`${offset} - (select skip from ${sql.table(SKIP_TARGET)})`;
}

/** The events before the walk's bucket (all of the list's past its end). */
export function skipped(): RawBuilder<number> {
  return sql<number>`(select skip from ${sql.table(SKIP_TARGET)})`;
}

/** The filter on the roll-ups' keys, in the column names of `events` (`emitter_id` is `emitter_key`). */
function rollupConditions(eb: ExpressionBuilder<Tables, 'events'>, filter: SkipFilter): Expression<SqlBool> {
  const all: Expression<SqlBool>[] = [];
  if (filter.types) all.push(eb('event_type', 'in', [...filter.types]));
  else if (filter.eventType !== undefined) all.push(eb('event_type', '=', filter.eventType));
  if (filter.source !== undefined) all.push(eb('source', '=', filter.source));
  const readable = readableBy(eb, filter.reader);
  if (readable) all.push(readable);
  return eb.and(all);
}
