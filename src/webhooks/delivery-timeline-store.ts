import { type Kysely, sql } from 'kysely';
import type { Tables } from '../storage/tables.js';

/** One bucket of a subscription's attempts: how many were delivered and how many failed. */
export interface TimelineBucket {
  timestamp: string;
  delivered: number;
  failed: number;
}

const MINUTE_MS = 60_000;

/**
 * How a subscription's delivery attempts went over time. The database groups them by the minute, hour or day
 * (a prefix of their ISO `created_at`) through the index on (subscription_id, created_at), so the work follows
 * the attempts within the range; buckets of 5 or 15 minutes are folded from minutes here. Runs on
 * `Database.reads` (SQLite reader threads): a long range of a busy subscription is many rows to group.
 */
export class DeliveryTimelineStore {
  constructor(private readonly reads: Kysely<Tables>) {}

  async buckets(
    subscriptionId: string,
    startMs: number,
    endMs: number,
    widthMs: number,
  ): Promise<TimelineBucket[]> {
    const prefix = widthMs >= 86_400_000 ? 10 : widthMs >= 3_600_000 ? 13 : 16;
    const rows = await this.reads
      .selectFrom('delivery_attempts')
      .select([
        sql<string>`substr(created_at, 1, ${sql.lit(prefix)})`.as('slot'),
        sql<number>`sum(case when status = 'delivered' then 1 else 0 end)`.as('delivered'),
        sql<number>`sum(case when status = 'delivered' then 0 else 1 end)`.as('failed'),
      ])
      .where('subscription_id', '=', subscriptionId)
      .where('created_at', '>=', new Date(startMs).toISOString())
      .where('created_at', '<', new Date(endMs).toISOString())
      .groupBy(sql`substr(created_at, 1, ${sql.lit(prefix)})`)
      .execute();
    const out = new Map<number, TimelineBucket>();
    for (const r of rows) {
      const at = Date.parse(
        prefix === 10 ? `${r.slot}T00:00Z` : prefix === 13 ? `${r.slot}:00Z` : `${r.slot}Z`,
      );
      const floor = Math.floor(at / Math.max(widthMs, MINUTE_MS)) * Math.max(widthMs, MINUTE_MS);
      const b = out.get(floor) ?? { timestamp: new Date(floor).toISOString(), delivered: 0, failed: 0 };
      b.delivered += Number(r.delivered);
      b.failed += Number(r.failed);
      out.set(floor, b);
    }
    return [...out.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => b);
  }
}
