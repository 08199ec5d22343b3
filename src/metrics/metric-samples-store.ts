import { type Kysely, sql } from 'kysely';
import type { Tables } from '../storage/tables.js';
import { type Fold, METRIC_SERIES, type MetricName } from './metric-series.js';
import type { MetricSamplesTable } from './metrics-tables.js';

export interface Point {
  timestamp: string;
  value: number;
}

/** Stores metric samples and reads them back folded into resolution buckets. */
export class MetricSamplesStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async insert(rows: MetricSamplesTable[]): Promise<void> {
    if (rows.length > 0) await this.db.insertInto('metric_samples').values(rows).execute();
  }

  /**
   * Every named series between two instants, one point per bucket of `widthMs` that holds samples
   * (buckets are aligned to the width since the epoch; empty buckets are left out, not zero-filled).
   */
  async series(names: readonly MetricName[], fromMs: number, toMs: number, widthMs: number) {
    const bucket = sql<number>`(time_ms - (time_ms % ${sql.lit(widthMs)}))`;
    const rows = await this.db
      .selectFrom('metric_samples')
      .select([
        'name',
        'instance',
        bucket.as('bucket'),
        sql<number>`avg(value)`.as('avg_value'),
        sql<number>`sum(value)`.as('sum_value'),
        sql<number>`max(value)`.as('max_value'),
      ])
      .where('time_ms', '>=', fromMs)
      .where('time_ms', '<', toMs)
      .where('name', 'in', [...names])
      .groupBy(['name', 'instance', bucket])
      .execute();

    // Fold each instance's bucket (`within`), then the instances of one bucket (`across`).
    const perBucket = new Map<string, Map<number, number[]>>();
    for (const r of rows) {
      const def = METRIC_SERIES[r.name as MetricName];
      if (!def) continue;
      const value = Number(pick(def.within, r.avg_value, r.sum_value, r.max_value));
      let buckets = perBucket.get(r.name);
      if (!buckets) {
        buckets = new Map();
        perBucket.set(r.name, buckets);
      }
      const at = Number(r.bucket);
      buckets.set(at, [...(buckets.get(at) ?? []), value]);
    }
    const out: Record<string, Point[]> = {};
    for (const name of names) {
      const buckets = perBucket.get(name) ?? new Map<number, number[]>();
      out[name] = [...buckets.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([at, values]) => ({
          timestamp: new Date(at).toISOString(),
          value: round(fold(METRIC_SERIES[name].across, values)),
        }));
    }
    return out;
  }

  async deleteOlderThan(cutoffMs: number): Promise<number> {
    const r = await this.db.deleteFrom('metric_samples').where('time_ms', '<', cutoffMs).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}

function pick(fold: Fold, avg: number, sum: number, max: number): number {
  return fold === 'avg' ? avg : fold === 'sum' ? sum : max;
}

function fold(how: Fold, values: number[]): number {
  if (how === 'sum') return values.reduce((a, b) => a + b, 0);
  if (how === 'max') return Math.max(...values);
  return values.reduce((a, b) => a + b, 0) / values.length;
}

const round = (n: number) => Math.round(n * 1000) / 1000;
