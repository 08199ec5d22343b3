/**
 * What one loaded plugin did on this instance since it was loaded: requests its routes handled and how long
 * they took, event deliveries and task runs, and every failure. Requests per minute are counted over the
 * last 60 seconds in one-second buckets.
 */
export class PluginStats {
  readonly loadedAt = Date.now();
  private requests = 0;
  private requestMs = 0;
  private deliveries = 0;
  private taskRuns = 0;
  private failures = 0;
  private lastFailureAt = 0;
  private readonly buckets = new Uint32Array(60);
  private bucketSecond = 0;

  /** A handled request (its failure, if any, is counted by `failure`). */
  request(durationMs: number): void {
    this.requests += 1;
    this.requestMs += durationMs;
    const second = Math.floor(Date.now() / 1000);
    this.advance(second);
    this.buckets[second % 60] = (this.buckets[second % 60] ?? 0) + 1;
  }

  delivery(): void {
    this.deliveries += 1;
  }

  taskRun(): void {
    this.taskRuns += 1;
  }

  failure(): void {
    this.failures += 1;
    this.lastFailureAt = Date.now();
  }

  /** Whether the plugin failed within the last `ms` milliseconds. */
  failedWithin(ms: number): boolean {
    return this.lastFailureAt > 0 && Date.now() - this.lastFailureAt < ms;
  }

  get errors(): number {
    return this.failures;
  }

  get requestsHandled(): number {
    return this.requests;
  }

  snapshot(): {
    requests_handled: number;
    events_handled: number;
    tasks_run: number;
    errors: number;
    uptime_seconds: number;
    requests_per_minute: number;
    average_response_time: number;
    error_rate: number;
  } {
    this.advance(Math.floor(Date.now() / 1000));
    const calls = this.requests + this.deliveries + this.taskRuns;
    return {
      requests_handled: this.requests,
      events_handled: this.deliveries,
      tasks_run: this.taskRuns,
      errors: this.failures,
      uptime_seconds: Math.floor((Date.now() - this.loadedAt) / 1000),
      requests_per_minute: this.buckets.reduce((a, b) => a + b, 0),
      average_response_time: this.requests === 0 ? 0 : round(this.requestMs / this.requests),
      error_rate: calls === 0 ? 0 : round(Math.min(1, this.failures / calls), 4),
    };
  }

  /** Clears the buckets of the seconds that passed since the last count. */
  private advance(second: number): void {
    if (this.bucketSecond === 0) this.bucketSecond = second;
    const gap = Math.min(60, second - this.bucketSecond);
    for (let i = 1; i <= gap; i++) this.buckets[(this.bucketSecond + i) % 60] = 0;
    if (second > this.bucketSecond) this.bucketSecond = second;
  }
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
