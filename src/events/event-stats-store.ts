import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Dialect } from '../storage/database.js';
import type { Tables } from '../storage/tables.js';
import { hiddenFamilies, mayRead } from './event-data.js';
import { minutesKeptFrom } from './rollup-compaction.js';

export type TimelineBucket = 'hour' | 'day';

/** Who asks: the figures count only the events this reader may read. */
export type StatsReader = Parameters<typeof mayRead>[1];

const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
/**
 * A bound inside a minute is counted to the millisecond from that minute's events when it holds at most this
 * many (read by the timestamp index); a busier minute is counted whole, and `time_range` says so.
 */
export const EDGE_EVENTS_LIMIT = 2000;
const TOP = 100;

const floorTo = (ms: number, unit: number) => Math.floor(ms / unit) * unit;
const ceilTo = (ms: number, unit: number) => Math.ceil(ms / unit) * unit;
const iso = (ms: number) => new Date(ms).toISOString();
const minuteOf = (ms: number) => iso(ms).slice(0, 16);
const hourOf = (ms: number) => iso(ms).slice(0, 13);
/** The start of an hour bucket (`YYYY-MM-DDTHH`), in milliseconds. */
const hourStart = (bucket: string) => Date.parse(`${bucket}:00:00.000Z`);

/** A part of the range: whole minutes or hours from the roll-ups, or a part of a minute from the events. */
type Piece = { from: 'm' | 'h' | 'events'; start: number; end: number; subtract?: true };

/** The figures of one readable key. */
interface KeyRow {
  event_type: string;
  source: string;
  n: number | string;
  ms: number | string | null;
}

/**
 * The figures of `GET /api/v1/events/stats` and `/events/health`, from the event roll-ups (migration 0015: per
 * minute and per hour, by type, source, level and confidential emitter, kept by triggers in the transaction of
 * every write and deletion). The cost depends on the number of hours and keys in the range, never on the number
 * of stored events: whole hours come from the hour roll-ups, the whole minutes around them from the minute
 * roll-ups (more than half an hour of them, or the hour under way: that hour less the minutes outside the
 * range), and a bound inside a minute from that minute's events (at most `EDGE_EVENTS_LIMIT` of them). Minute
 * rows are kept for `events.rollup_minute_retention_hours` (rollup-compaction.ts): a bound older than that is
 * counted to the whole hour, and `time_range` says so.
 */
export class EventStatsStore {
  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: Dialect,
  ) {}

  /**
   * `start` and `end` are both included. Answers the range actually counted (the given one, unless a bound fell
   * in a minute too busy to count by its events: then that whole minute).
   */
  async stats(start: string, end: string, bucket: TimelineBucket, reader: StatsReader) {
    // Subscriptions belong to their creator: a reader who is not an admin counts their own (as they list them).
    // Read beside the roll-ups, not after them.
    let activeQuery = this.db
      .selectFrom('subscriptions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'active');
    if (!reader.isAdmin) activeQuery = activeQuery.where('owner_id', '=', reader.userId);
    const activeRead = activeQuery.executeTakeFirst();
    const kept = await minutesKeptFrom(this.db);
    const { pieces, range } = await this.plan(
      Date.parse(start),
      Date.parse(end) + 1,
      kept === undefined ? undefined : hourStart(kept),
      Date.now(),
    );
    const width = bucket === 'hour' ? 13 : 10;
    const visible = this.visibleTo(reader);

    const visibleKeys = this.visibleKeys(reader);
    const timelineOf = (notHidden: RawBuilder<unknown>) =>
      sql<{ tb: string; n: number | string; ms: number | string | null }>`
        select substr(bucket, 1, ${sql.lit(width)}) as tb, sum(n) as n, sum(ms) as ms
        from (${this.union(pieces, 'bucket', sql`${visibleKeys} and ${notHidden}`)}) p
        group by substr(bucket, 1, ${sql.lit(width)}) order by tb`.execute(this.db);
    // A reader whom no platform family is hidden from may read every key the first query answers (the
    // confidential rule is in `visible`): the timeline needs nothing from it, and both read at once (on SQLite,
    // on two reader threads). The key query sums by key number, then names the keys.
    const everyFamily = hiddenFamilies(reader).length === 0;
    const [keyRows, early] = await Promise.all([
      sql<KeyRow & { key_id: number; security_level: string; emitter_key: string }>`
        select k.event_type, k.source, k.security_level, k.emitter_key, g.key_id, g.n, g.ms
        from (select key_id, sum(n) as n, sum(ms) as ms from (${this.union(pieces, 'key_id', sql`1 = 1`)}) p
          group by key_id) g
        join event_rollup_keys k on k.id = g.key_id
        where ${visible}`.execute(this.db),
      everyFamily ? timelineOf(sql`1 = 1`) : undefined,
    ]);
    // The reader's rule, applied per distinct key (bounded by types × sources, never by events).
    const readable: KeyRow[] = [];
    const hidden: number[] = [];
    for (const r of keyRows.rows) {
      const row = {
        event_type: r.event_type,
        source: r.source,
        security_level: r.security_level,
        emitter_id: r.emitter_key === '' ? null : r.emitter_key,
      };
      if (mayRead(row, reader)) readable.push(r);
      else hidden.push(Number(r.key_id));
    }
    const timeline =
      readable.length === 0
        ? []
        : early && hidden.length === 0
          ? early.rows
          : (await timelineOf(hidden.length === 0 ? sql`1 = 1` : this.notAmong(hidden))).rows;
    const active = await activeRead;

    const byType = new Map<string, { n: number; ms: number }>();
    const bySource = new Map<string, number>();
    let total = 0;
    let totalMs = 0;
    for (const r of readable) {
      const n = Number(r.n);
      if (n <= 0) continue;
      const ms = Number(r.ms ?? 0);
      total += n;
      totalMs += ms;
      const t = byType.get(r.event_type) ?? { n: 0, ms: 0 };
      t.n += n;
      t.ms += ms;
      byType.set(r.event_type, t);
      bySource.set(r.source, (bySource.get(r.source) ?? 0) + n);
    }
    const minutes = Math.max((range.end - range.start) / MINUTE_MS, 1 / 60);
    const pct = (n: number) => (total === 0 ? 0 : round((n / total) * 100));
    const top = <T>(entries: [string, T][], count: (v: T) => number) =>
      entries.sort(([a, x], [b, y]) => count(y) - count(x) || (a < b ? -1 : a > b ? 1 : 0)).slice(0, TOP);
    return {
      time_range: { start: iso(range.start), end: iso(range.end) },
      summary: {
        total_events: total,
        events_per_minute: round(total / minutes, 4),
        unique_event_types: byType.size,
        active_subscriptions: Number(active?.n ?? 0),
        average_processing_time_ms: total === 0 ? 0 : round(totalMs / total, 3),
      },
      by_event_type: top([...byType], (v) => v.n).map(([event_type, v]) => ({
        event_type,
        count: v.n,
        percentage: pct(v.n),
        avg_processing_time_ms: round(v.ms / v.n, 3),
      })),
      by_source: top([...bySource], (v) => v).map(([source, n]) => ({
        source,
        count: n,
        percentage: pct(n),
      })),
      timeline: timeline
        .filter((r) => Number(r.n) > 0)
        .map((r) => ({
          timestamp: bucket === 'hour' ? `${r.tb}:00:00.000Z` : `${r.tb}T00:00:00.000Z`,
          event_count: Number(r.n),
          avg_processing_time_ms: round(Number(r.ms ?? 0) / Number(r.n), 3),
        })),
    };
  }

  /**
   * Measured over recent windows, from the minute roll-ups: events stored since the start of the previous minute
   * (a window of 60 to 120 s) and their mean emit time over the last 5 to 6 minutes; delivery errors and latency
   * from the attempts of the last hour.
   */
  async recent(now: number) {
    const rateFrom = floorTo(now, MINUTE_MS) - MINUTE_MS;
    const latencyFrom = floorTo(now, MINUTE_MS) - 5 * MINUTE_MS;
    const hourAgo = new Date(now - HOUR_MS).toISOString();
    const [minutes, attempts] = await Promise.all([
      this.db
        .selectFrom('event_rollups')
        .select((eb) => [
          eb.fn.sum<number | string | null>('event_count').as('n'),
          eb.fn.sum<number | string | null>('processing_ms').as('ms'),
          eb.fn
            .sum<number | string | null>(
              sql`case when bucket >= ${minuteOf(rateFrom)} then event_count else 0 end`,
            )
            .as('recent'),
        ])
        .where('span', '=', 'm')
        .where('bucket', '>=', minuteOf(latencyFrom))
        .executeTakeFirst(),
      this.db
        .selectFrom('delivery_attempts')
        .select((eb) => [
          eb.fn.countAll<number>().as('n'),
          eb.fn.sum<number | null>(sql`case when status = 'delivered' then 0 else 1 end`).as('failed'),
          eb.fn.avg<number | null>('latency_ms').as('avg_ms'),
        ])
        .where('created_at', '>=', hourAgo)
        .executeTakeFirst(),
    ]);
    const recentCount = Number(minutes?.recent ?? 0);
    const count = Number(minutes?.n ?? 0);
    const ms = Number(minutes?.ms ?? 0);
    const tried = Number(attempts?.n ?? 0);
    return {
      events_per_second: round(recentCount / Math.max(1, (now - rateFrom) / 1000), 3),
      average_emit_latency_ms: count <= 0 ? 0 : round(ms / count, 3),
      delivery_attempts_last_hour: tried,
      delivery_error_rate: tried === 0 ? 0 : round(Number(attempts?.failed ?? 0) / tried, 4),
      average_delivery_latency_ms: round(Number(attempts?.avg_ms ?? 0), 3),
    };
  }

  /**
   * Splits [a, b) into pieces: events for parts of minutes, minute roll-ups around whole hours, hour roll-ups.
   * Minutes before `keptFrom` were folded into their hours (rollup-compaction.ts): a bound in one of them is
   * moved out to its hour's edge (the start back, the end forward), so that part is read from the hour rows.
   * The part of an hour at either end is read from the side with fewer minute rows: its own minutes, or the
   * whole hour less the minutes outside the range. For a past hour the shorter side is taken; for the hour
   * under way at `now` (a range up to now: the default) always the whole hour less the minutes after the range,
   * which are this minute's and none later, so the hour's minutes so far are never read one by one.
   */
  private async plan(
    from: number,
    to: number,
    keptFrom: number | undefined,
    now: number,
  ): Promise<{ pieces: Piece[]; range: { start: number; end: number } }> {
    const folded = (ms: number) => keptFrom !== undefined && floorTo(ms, MINUTE_MS) < keptFrom;
    const a = folded(from) ? floorTo(from, HOUR_MS) : from;
    const b = folded(to - 1) ? ceilTo(to, HOUR_MS) : to;
    const pieces: Piece[] = [];
    let start = a;
    let end = b;
    const ma = ceilTo(a, MINUTE_MS);
    const mb = floorTo(b, MINUTE_MS);
    // The parts of a minute at either end, or the whole range when it lies inside one minute.
    const edges: [number, number][] = [];
    if (ma > mb) edges.push([a, b]);
    else {
      if (a < ma) edges.push([a, ma]);
      if (mb < b) edges.push([mb, b]);
    }
    let wholeFrom = ma;
    const wholeTo = mb;
    // Both edges' minutes at once (two reads, on SQLite on two reader threads).
    const busy = await Promise.all(edges.map(([s]) => this.eventsInMinute(floorTo(s, MINUTE_MS))));
    for (const [i, [s, e]] of edges.entries()) {
      const minute = floorTo(s, MINUTE_MS);
      if ((busy[i] ?? 0) <= EDGE_EVENTS_LIMIT) {
        pieces.push({ from: 'events', start: s, end: e });
        continue;
      }
      // Too busy to count by its events: the whole minute, from its roll-up.
      pieces.push({ from: 'm', start: minute, end: minute + MINUTE_MS });
      if (s === a) start = minute;
      if (e === b) end = minute + MINUTE_MS;
    }
    if (wholeFrom < wholeTo) {
      const ha = ceilTo(wholeFrom, HOUR_MS);
      const hb = floorTo(wholeTo, HOUR_MS);
      if (ha < hb) {
        // A part of an hour of more than half an hour is read as the whole hour less the minutes outside it.
        if (ha - wholeFrom > HOUR_MS / 2) {
          pieces.push({ from: 'h', start: ha - HOUR_MS, end: ha });
          pieces.push({ from: 'm', start: ha - HOUR_MS, end: wholeFrom, subtract: true });
        } else if (wholeFrom < ha) pieces.push({ from: 'm', start: wholeFrom, end: ha });
        pieces.push({ from: 'h', start: ha, end: hb });
        const underWay = hb + HOUR_MS > now;
        if (wholeTo - hb > HOUR_MS / 2 || (underWay && wholeTo > hb)) {
          pieces.push({ from: 'h', start: hb, end: hb + HOUR_MS });
          pieces.push({ from: 'm', start: wholeTo, end: hb + HOUR_MS, subtract: true });
          wholeFrom = wholeTo;
        } else wholeFrom = hb;
      }
      if (wholeFrom < wholeTo) pieces.push({ from: 'm', start: wholeFrom, end: wholeTo });
    }
    return { pieces, range: { start, end: end - 1 } };
  }

  private async eventsInMinute(minute: number): Promise<number> {
    const row = await this.db
      .selectFrom('event_rollups')
      .select((eb) => eb.fn.sum<number | string | null>('event_count').as('n'))
      .where('span', '=', 'm')
      .where('bucket', '=', minuteOf(minute))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /**
   * The pieces' sums by `by` (the key number, or the bucket) of the rows `where` keeps (on `key_id`): one row set of
   * (`by`, n, ms) with a row per piece and value. Each piece is summed by itself before the pieces are added up:
   * SQLite groups by sorting, and an hour piece's rows come in bucket order already (its primary key), so its
   * timeline needs no sort at all and its key sums one sort of one number (a day of hours at 1M events: 17,000
   * rows, 5 ms, against 15 through one sort of every piece's rows together).
   */
  private union(
    pieces: readonly Piece[],
    by: 'key_id' | 'bucket',
    where: RawBuilder<unknown>,
  ): RawBuilder<unknown> {
    if (pieces.length === 0) {
      const none = by === 'key_id' ? sql`cast(null as bigint)` : sql`cast(null as text)`;
      return sql`select ${none} as ${sql.ref(by)}, 0 as n, 0 as ms where 1 = 0`;
    }
    return sql.join(
      pieces.map((p) => {
        if (p.from === 'events') {
          const column = by === 'key_id' ? sql`key_id` : sql`substr(timestamp, 1, 16)`;
          return sql`select ${column} as ${sql.ref(by)}, count(*) as n, sum(ms) as ms from (
            select e.timestamp, k.id as key_id, e.processing_time_ms as ms
            from events e join event_rollup_keys k on k.event_type = e.event_type and k.source = e.source
              and k.security_level = e.security_level and k.emitter_key =
                case when e.security_level = 'confidential' then coalesce(e.emitter_id, '') else '' end
            where e.timestamp >= ${iso(p.start)} and e.timestamp < ${iso(p.end)}) x
            where ${where} group by 1`;
        }
        const cut = p.from === 'm' ? minuteOf : hourOf;
        const sign = sql.raw(p.subtract ? '-' : '');
        return sql`select ${sql.ref(by)}, ${sign}sum(event_count) as n, ${sign}sum(processing_ms) as ms
          from event_rollups where span = ${p.from} and bucket >= ${cut(p.start)} and bucket < ${cut(p.end)}
            and ${where}
          group by ${sql.ref(by)}`;
      }),
      sql` union all `,
    );
  }

  /** Confidential keys count only for their emitter and admins (the rest of the rule is applied per key). */
  private visibleTo(reader: StatsReader): RawBuilder<unknown> {
    if (reader.isAdmin) return sql`1 = 1`;
    return sql`(security_level <> 'confidential' or emitter_key = ${reader.userId})`;
  }

  /**
   * Rows whose `key_id` is none of `keys`, passed as one JSON array: one parameter however many keys a reader may
   * not read (a statement takes at most 32,766 on SQLite).
   */
  private notAmong(keys: readonly number[]): RawBuilder<unknown> {
    const list = JSON.stringify(keys);
    return this.dialect === 'postgres'
      ? sql`key_id not in (select jsonb_array_elements_text(${list}::jsonb)::bigint)`
      : sql`key_id not in (select value from json_each(${list}))`;
  }

  /** The same rule on a row set of key numbers (`key_id`). */
  private visibleKeys(reader: StatsReader): RawBuilder<unknown> {
    if (reader.isAdmin) return sql`1 = 1`;
    return sql`key_id in (select id from event_rollup_keys where ${this.visibleTo(reader)})`;
  }
}
