import type { FastifyBaseLogger } from 'fastify';
import type { CacheNamespace } from '../cache/cache-namespace.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { newId } from '../kernel/new-id.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import { bookkeeping } from '../storage/bookkeeping.js';
import type { Database } from '../storage/database.js';
import { MetricSamplesStore, type Point } from './metric-samples-store.js';
import { type MetricName, RESOLUTIONS, type Resolution } from './metric-series.js';
import type { MetricSamplesTable } from './metrics-tables.js';
import { RequestMetrics, rssMb } from './request-metrics.js';

const MIB = 1024 * 1024;
const HOUR_MS = 3_600_000;

/**
 * The `metrics_collector` service: measures every response (RequestMetrics) and, every
 * `metrics.sample_interval_seconds`, writes one sample per series into `metric_samples`.
 * The series API reads those samples back, cached in `api_responses` until the next sample lands.
 */
export class MetricsCollector implements PlatformService {
  readonly name = 'metrics_collector';
  readonly type = 'monitoring';
  readonly dependencies = ['database'] as const;
  readonly requests = new RequestMetrics();
  readonly store: MetricSamplesStore;
  /** Identifies this instance's rows among those of the other instances of a cluster. */
  readonly instance = newId('inst');
  readonly startedAt = Date.now();
  private readonly startCpu = process.cpuUsage();
  private sampleTimer: NodeJS.Timeout | undefined;
  private retentionTimer: NodeJS.Timeout | undefined;
  private lastSampleAt = Date.now();
  private lastCpu = process.cpuUsage();
  private lastEvents: number | undefined;
  private memorySumMb = 0;
  private memoryReadings = 0;
  private samplesWritten = 0;
  private sampleFailures = 0;
  private lastError: string | undefined;
  private latest: Partial<Record<MetricName, number>> = {};
  private sampling: Promise<Partial<Record<MetricName, number>>> | undefined;

  constructor(
    private readonly deps: {
      database: Database;
      cfg: () => PlatformConfig;
      registry: ServiceRegistry;
      responses: CacheNamespace;
      /** A child logger with `component: 'metrics'`. */
      log?: Pick<FastifyBaseLogger, 'warn'>;
    },
  ) {
    this.store = new MetricSamplesStore(bookkeeping(deps.database), deps.database.reads);
  }

  async start(): Promise<void> {
    // lastSampleAt and lastCpu carry on across a restart: responses keep being measured while the service is
    // stopped, so the next sample's interval starts at the previous sample, not at the restart.
    // The first interval's events count from here: without a starting count the first sample would have no
    // events_per_second at all, however many events it saw.
    this.lastEvents ??= this.processedEvents();
    this.schedule();
    await this.applyRetention().catch(() => {});
    this.retentionTimer = setInterval(() => void this.applyRetention().catch(() => {}), HOUR_MS);
    this.retentionTimer.unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.sampleTimer);
    clearInterval(this.retentionTimer);
    this.sampleTimer = undefined;
    this.retentionTimer = undefined;
    await this.sampling?.catch(() => {});
  }

  /**
   * Takes a sample now (the timer calls this every interval; tests call it instead of waiting).
   * Resolves to the values written, by series name.
   */
  sampleNow(): Promise<Partial<Record<MetricName, number>>> {
    const run = (this.sampling ?? Promise.resolve()).catch(() => {}).then(() => this.takeSample());
    this.sampling = run;
    return run;
  }

  /** Samples of the named series, folded into buckets of `resolution`, covering [startMs, endMs]. */
  series(names: readonly MetricName[], startMs: number, endMs: number, resolution: Resolution) {
    const width = RESOLUTIONS[resolution];
    const from = Math.floor(startMs / width) * width;
    const to = Math.floor(endMs / width) * width + width;
    const key = `metrics:${resolution}:${from}:${to}:${[...names].sort().join(',')}`;
    return this.deps.responses.getOrCompute<Record<string, Point[]>>(
      key,
      () => this.store.series(names, from, to, width),
      this.deps.cfg().metrics.sample_interval_seconds,
    );
  }

  /** CPU use of the process since the collector started, as a percentage of one core. */
  averageCpuPercent(): number {
    const cpu = process.cpuUsage(this.startCpu);
    const wallUs = Math.max(1, (Date.now() - this.startedAt) * 1000);
    return ((cpu.user + cpu.system) / wallUs) * 100;
  }

  /** Mean of the resident-memory readings taken at every sample plus one taken now. */
  averageMemoryMb(): number {
    return (this.memorySumMb + rssMb()) / (this.memoryReadings + 1);
  }

  /** The highest resident memory the process reached (the kernel's own figure). */
  peakMemoryMb(): number {
    return Math.max(process.resourceUsage().maxRSS / 1024, rssMb());
  }

  async applyRetention(): Promise<number> {
    const days = this.deps.cfg().metrics.retention_days;
    return this.store.deleteOlderThan(Date.now() - days * 86_400_000);
  }

  async health(): Promise<ServiceHealth> {
    const intervalMs = this.deps.cfg().metrics.sample_interval_seconds * 1000;
    const ageMs = Date.now() - this.lastSampleAt;
    const late = ageMs > intervalMs * 3;
    return {
      status: late || this.lastError ? 'warning' : 'healthy',
      checks: [
        {
          name: 'sampling',
          status: late ? 'warning' : 'pass',
          last_sample_age_seconds: Math.round(ageMs / 1000),
          interval_seconds: intervalMs / 1000,
        },
        {
          name: 'storage',
          status: this.lastError ? 'warning' : 'pass',
          samples_written: this.samplesWritten,
          failures: this.sampleFailures,
          ...(this.lastError ? { error: this.lastError } : {}),
        },
      ],
    };
  }

  metrics(): Record<string, number> {
    const routes = this.requests.routeFigures();
    let total = 0;
    let sumMs = 0;
    let errors = 0;
    for (const r of routes) {
      total += r.latency.count;
      sumMs += r.latency.sumMs;
      for (const [status, n] of r.byStatus) if (status >= 400) errors += n;
    }
    return {
      requests_handled: total,
      avg_response_time_ms: total === 0 ? 0 : round(sumMs / total),
      error_rate: total === 0 ? 0 : round(errors / total, 4),
      requests_per_second: round(this.latest.requests_per_second ?? 0),
      memory_usage_mb: round(rssMb()),
      cpu_usage_percent: round(this.latest.cpu_usage_percent ?? this.averageCpuPercent()),
      samples_written: this.samplesWritten,
      sample_failures: this.sampleFailures,
    };
  }

  settings(): Record<string, unknown> {
    const m = this.deps.cfg().metrics;
    return {
      sample_interval_seconds: m.sample_interval_seconds,
      retention_days: m.retention_days,
      public_prometheus: m.public_prometheus,
      instance: this.instance,
    };
  }

  private schedule(): void {
    clearTimeout(this.sampleTimer);
    // Re-armed after every sample so a changed interval applies from the next one on.
    this.sampleTimer = setTimeout(() => {
      this.sampleNow()
        .catch(() => {})
        .finally(() => {
          if (this.sampleTimer) this.schedule();
        });
    }, this.deps.cfg().metrics.sample_interval_seconds * 1000);
    this.sampleTimer.unref();
  }

  private async takeSample(): Promise<Partial<Record<MetricName, number>>> {
    const now = Date.now();
    const seconds = Math.max(0.001, (now - this.lastSampleAt) / 1000);
    const window = this.requests.takeWindow();
    const cpu = process.cpuUsage(this.lastCpu);
    this.lastCpu = process.cpuUsage();
    this.lastSampleAt = now;
    const memory = process.memoryUsage();
    this.memorySumMb += memory.rss / MIB;
    this.memoryReadings += 1;

    const values: Partial<Record<MetricName, number>> = {
      requests_per_second: window.count / seconds,
      request_count: window.count,
      error_count: window.clientErrors + window.serverErrors,
      server_error_count: window.serverErrors,
      memory_usage_mb: memory.rss / MIB,
      heap_used_mb: memory.heapUsed / MIB,
      cpu_usage_percent: ((cpu.user + cpu.system) / (seconds * 1e6)) * 100,
    };
    // Latency series exist only for intervals that had requests: an idle interval has no response time.
    if (window.count > 0) {
      const sorted = window.durationsMs.sort((a, b) => a - b);
      values.response_time_ms = sorted.reduce((a, b) => a + b, 0) / sorted.length;
      values.response_time_p50_ms = percentile(sorted, 0.5);
      values.response_time_p95_ms = percentile(sorted, 0.95);
      values.response_time_p99_ms = percentile(sorted, 0.99);
      values.error_rate = (window.clientErrors + window.serverErrors) / window.count;
    }
    const processed = this.processedEvents();
    if (processed !== undefined) {
      if (this.lastEvents !== undefined && processed >= this.lastEvents) {
        values.events_per_second = (processed - this.lastEvents) / seconds;
      }
      this.lastEvents = processed;
    }

    const timestamp = new Date(now).toISOString();
    const rows: MetricSamplesTable[] = Object.entries(values).map(([name, value]) => ({
      timestamp,
      time_ms: now,
      instance: this.instance,
      name,
      value: round(value, 4),
    }));
    try {
      await this.store.insert(rows);
      this.samplesWritten += rows.length;
      this.lastError = undefined;
    } catch (err) {
      this.sampleFailures += 1;
      // Logged once per run of failures, not every interval while the database is away.
      if (!this.lastError) this.deps.log?.warn({ err }, 'could not store metric samples');
      this.lastError = (err as Error).message;
      throw err;
    }
    this.latest = values;
    // The cached series no longer show every sample: drop them on every instance.
    await this.deps.responses.clear('metrics:*').catch(() => {});
    return values;
  }

  /** The event bus's count of committed events, when that service is registered. */
  private processedEvents(): number | undefined {
    if (!this.deps.registry.has('event_bus')) return undefined;
    const value = this.deps.registry.get('event_bus').metrics()['processed_events'];
    return typeof value === 'number' ? value : undefined;
  }
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], q: number): number {
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? 0;
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
