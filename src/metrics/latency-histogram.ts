/** Bucket bounds grow by 2 % from 0.01 ms: a quantile read from them is within 1 % of the true value. */
const MIN_MS = 0.01;
const GROWTH = 1.02;
const LOG_GROWTH = Math.log(GROWTH);
/** Enough buckets to reach about 10 minutes; slower responses share the last one. */
const BUCKETS = Math.ceil(Math.log(600_000 / MIN_MS) / LOG_GROWTH) + 1;

/**
 * Response times in log-spaced buckets: recording is one array increment, and any quantile can be read
 * back with bounded relative error. Cheap enough to keep one per route on every request.
 */
export class LatencyHistogram {
  private readonly counts = new Float64Array(BUCKETS);
  count = 0;
  sumMs = 0;
  maxMs = 0;

  record(ms: number): void {
    const index = ms <= MIN_MS ? 0 : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / MIN_MS) / LOG_GROWTH));
    this.counts[index] = (this.counts[index] ?? 0) + 1;
    this.count += 1;
    this.sumMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
  }

  /**
   * How many values were at most each bound (ms, ascending): Prometheus's cumulative buckets. A value within
   * 2 % below a bound may count in the next bucket (the log buckets' resolution).
   */
  cumulative(boundsMs: readonly number[]): number[] {
    const out: number[] = [];
    let seen = 0;
    let i = 0;
    for (const bound of boundsMs) {
      const last =
        bound < MIN_MS ? -1 : Math.min(BUCKETS - 1, Math.floor(Math.log(bound / MIN_MS) / LOG_GROWTH + 1e-9));
      for (; i <= last; i++) seen += this.counts[i] ?? 0;
      out.push(seen);
    }
    return out;
  }

  /** The q-quantile (0–1) in ms by nearest rank, never above the largest value recorded; 0 when empty. */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i] ?? 0;
      if (seen >= rank) {
        // The last bucket is open-ended: the largest value is the only bound known for it.
        if (i === BUCKETS - 1) return this.maxMs;
        // The bucket holds (lower, upper]; its geometric middle is within 1 % of anything inside it.
        const upper = MIN_MS * GROWTH ** i;
        return Math.min(this.maxMs, i === 0 ? upper : upper / Math.sqrt(GROWTH));
      }
    }
    return this.maxMs;
  }
}
