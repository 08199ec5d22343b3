import { type Kysely, sql } from 'kysely';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { Tables } from '../storage/tables.js';
import { type Fold, METRIC_SERIES, type MetricName, WEIGHT_SERIES } from './metric-series.js';
import type { MetricSamplesTable } from './metrics-tables.js';

export interface Point {
  timestamp: string;
  value: number;
}

/** Stores metric samples and reads them back folded into resolution buckets. */
export class MetricSamplesStore {
  constructor(
    /**
     * How samples and their retention commit (storage/bookkeeping.ts: unsynced on SQLite). A power loss may take
     * the last seconds of samples, a gap in the charts like an instance that stopped; a deletion lost so is
     * done again by the next hour's retention.
     */
    private readonly writes: Bookkeeping,
    /** Where series are read (Database.reads): a range of samples grows with the instances and the days kept. */
    private readonly reads: Kysely<Tables>,
  ) {}

  async insert(rows: MetricSamplesTable[]): Promise<void> {
    if (rows.length > 0) await this.writes((trx) => trx.insertInto('metric_samples').values(rows).execute());
  }

  /**
   * Every named series between two instants, one point per bucket of `widthMs` that holds samples
   * (buckets are aligned to the width since the epoch; empty buckets are left out, not zero-filled).
   */
  async series(names: readonly MetricName[], fromMs: number, toMs: number, widthMs: number) {
    const bucket = sql<number>`(time_ms - (time_ms % ${sql.lit(widthMs)}))`;
    const weighted = names.filter((n) => METRIC_SERIES[n].within === 'weighted');
    const [rows, weights] = await Promise.all([
      this.reads
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
        .execute(),
      weighted.length === 0 ? Promise.resolve([]) : this.weightedSums(weighted, fromMs, toMs, widthMs),
    ]);
    // Σ value × responses and Σ responses of each weighted series, per instance and bucket.
    const sums = new Map<string, { product: number; weight: number }>();
    for (const w of weights) {
      sums.set(`${w.name}|${w.instance}|${Number(w.bucket)}`, {
        product: Number(w.product),
        weight: Number(w.weight),
      });
    }

    // Fold each instance's bucket (`within`), then the instances of one bucket (`across`).
    const perBucket = new Map<string, Map<number, Part[]>>();
    for (const r of rows) {
      const def = METRIC_SERIES[r.name as MetricName];
      if (!def) continue;
      const at = Number(r.bucket);
      const value = Number(pick(def.within, r.avg_value, r.sum_value, r.max_value));
      // A weighted series without its weights (samples of an older collector) falls back to the plain mean.
      const sum = def.within === 'weighted' ? sums.get(`${r.name}|${r.instance}|${at}`) : undefined;
      const part: Part =
        sum && sum.weight > 0
          ? { value: sum.product / sum.weight, weight: sum.weight }
          : { value, weight: 1 };
      let buckets = perBucket.get(r.name);
      if (!buckets) {
        buckets = new Map();
        perBucket.set(r.name, buckets);
      }
      const parts = buckets.get(at);
      if (parts) parts.push(part);
      else buckets.set(at, [part]);
    }
    const out: Record<string, Point[]> = {};
    for (const name of names) {
      const buckets = perBucket.get(name) ?? new Map<number, Part[]>();
      out[name] = [...buckets.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([at, parts]) => ({
          timestamp: new Date(at).toISOString(),
          value: round(fold(METRIC_SERIES[name].across, parts)),
        }));
    }
    return out;
  }

  /**
   * For series weighted by responses: Σ (value × the same sample's request_count) and Σ request_count, per
   * series, instance and bucket. A collector writes all of a sample's rows at one instant, which pairs them.
   */
  private weightedSums(names: readonly MetricName[], fromMs: number, toMs: number, widthMs: number) {
    const bucket = sql<number>`(v.time_ms - (v.time_ms % ${sql.lit(widthMs)}))`;
    return this.reads
      .selectFrom('metric_samples as v')
      .innerJoin('metric_samples as w', (join) =>
        join
          .onRef('w.instance', '=', 'v.instance')
          .onRef('w.time_ms', '=', 'v.time_ms')
          .on('w.name', '=', WEIGHT_SERIES),
      )
      .select([
        'v.name as name',
        'v.instance as instance',
        bucket.as('bucket'),
        sql<number>`sum(v.value * w.value)`.as('product'),
        sql<number>`sum(w.value)`.as('weight'),
      ])
      .where('v.time_ms', '>=', fromMs)
      .where('v.time_ms', '<', toMs)
      .where('v.name', 'in', [...names])
      .groupBy(['v.name', 'v.instance', bucket])
      .execute();
  }

  async deleteOlderThan(cutoffMs: number): Promise<number> {
    const r = await this.writes((trx) =>
      trx.deleteFrom('metric_samples').where('time_ms', '<', cutoffMs).executeTakeFirst(),
    );
    return Number(r.numDeletedRows);
  }
}

/** One instance's value in a bucket, and how many responses it stands for (1 when not weighted). */
interface Part {
  value: number;
  weight: number;
}

function pick(fold: Fold, avg: number, sum: number, max: number): number {
  return fold === 'sum' ? sum : fold === 'max' ? max : avg;
}

function fold(how: Fold, parts: Part[]): number {
  const values = parts.map((p) => p.value);
  if (how === 'sum') return values.reduce((a, b) => a + b, 0);
  if (how === 'max') return Math.max(...values);
  if (how === 'weighted') {
    const weight = parts.reduce((a, p) => a + p.weight, 0);
    if (weight > 0) return parts.reduce((a, p) => a + p.value * p.weight, 0) / weight;
  }
  return values.reduce((a, b) => a + b, 0) / values.length;
}

const round = (n: number) => Math.round(n * 1000) / 1000;
