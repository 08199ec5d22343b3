import { type Kysely, sql } from 'kysely';
import type { Tables } from '../storage/tables.js';

export type TimelineBucket = 'hour' | 'day';

const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;

/** Aggregates over stored events and deliveries, computed by the database on both dialects. */
export class EventStatsStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async stats(start: string, end: string, bucket: TimelineBucket) {
    const inRange = this.db
      .selectFrom('events')
      .where('timestamp', '>=', start)
      .where('timestamp', '<=', end);
    // ISO timestamps sort and cut as text: the first 13 characters are the hour, the first 10 the day.
    const width = bucket === 'hour' ? 13 : 10;
    const [summary, types, byType, bySource, timeline, active] = await Promise.all([
      inRange
        .select((eb) => [
          eb.fn.countAll<number>().as('total'),
          eb.fn.avg<number | null>('processing_time_ms').as('avg_ms'),
        ])
        .executeTakeFirst(),
      inRange.select((eb) => eb.fn.count<number>('event_type').distinct().as('n')).executeTakeFirst(),
      inRange
        .select((eb) => [
          'event_type',
          eb.fn.countAll<number>().as('n'),
          eb.fn.avg<number | null>('processing_time_ms').as('avg_ms'),
        ])
        .groupBy('event_type')
        .orderBy('n', 'desc')
        .orderBy('event_type')
        .limit(100)
        .execute(),
      inRange
        .select((eb) => ['source', eb.fn.countAll<number>().as('n')])
        .groupBy('source')
        .orderBy('n', 'desc')
        .orderBy('source')
        .limit(100)
        .execute(),
      inRange
        .select((eb) => [
          sql<string>`substr(timestamp, 1, ${sql.lit(width)})`.as('bucket'),
          eb.fn.countAll<number>().as('n'),
          eb.fn.avg<number | null>('processing_time_ms').as('avg_ms'),
        ])
        .groupBy(sql`substr(timestamp, 1, ${sql.lit(width)})`)
        .orderBy('bucket')
        .execute(),
      this.db
        .selectFrom('subscriptions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'active')
        .executeTakeFirst(),
    ]);
    const total = Number(summary?.total ?? 0);
    const minutes = Math.max((Date.parse(end) - Date.parse(start)) / 60_000, 1 / 60);
    const pct = (n: number) => (total === 0 ? 0 : round((n / total) * 100));
    return {
      summary: {
        total_events: total,
        events_per_minute: round(total / minutes, 4),
        unique_event_types: Number(types?.n ?? 0),
        active_subscriptions: Number(active?.n ?? 0),
        average_processing_time_ms: round(Number(summary?.avg_ms ?? 0), 3),
      },
      by_event_type: byType.map((r) => ({
        event_type: r.event_type,
        count: Number(r.n),
        percentage: pct(Number(r.n)),
        avg_processing_time_ms: round(Number(r.avg_ms ?? 0), 3),
      })),
      by_source: bySource.map((r) => ({
        source: r.source,
        count: Number(r.n),
        percentage: pct(Number(r.n)),
      })),
      timeline: timeline.map((r) => ({
        timestamp: bucket === 'hour' ? `${r.bucket}:00:00.000Z` : `${r.bucket}T00:00:00.000Z`,
        event_count: Number(r.n),
        avg_processing_time_ms: round(Number(r.avg_ms ?? 0), 3),
      })),
    };
  }

  /** Measured over recent windows: throughput, emit latency, delivery errors and latency. */
  async recent(now: number) {
    const minuteAgo = new Date(now - 60_000).toISOString();
    const fiveMinutesAgo = new Date(now - 300_000).toISOString();
    const hourAgo = new Date(now - 3_600_000).toISOString();
    const [lastMinute, latency, attempts] = await Promise.all([
      this.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('timestamp', '>=', minuteAgo)
        .executeTakeFirst(),
      this.db
        .selectFrom('events')
        .select((eb) => eb.fn.avg<number | null>('processing_time_ms').as('avg_ms'))
        .where('timestamp', '>=', fiveMinutesAgo)
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
    const tried = Number(attempts?.n ?? 0);
    return {
      events_last_minute: Number(lastMinute?.n ?? 0),
      average_emit_latency_ms: round(Number(latency?.avg_ms ?? 0), 3),
      delivery_attempts_last_hour: tried,
      delivery_error_rate: tried === 0 ? 0 : round(Number(attempts?.failed ?? 0) / tried, 4),
      average_delivery_latency_ms: round(Number(attempts?.avg_ms ?? 0), 3),
    };
  }
}
