import type { ServiceRegistry } from '../kernel/service-registry.js';
import { MetricsCollector } from '../metrics/metrics-collector.js';

/** Cumulative request figures since start. */
export interface RequestTotals {
  count: number;
  sumMs: number;
  errors: number;
}

interface Snapshot {
  at: number;
  cpuUs: number;
  requests: RequestTotals | undefined;
}

export interface WindowFigures {
  /** Seconds the figures cover (up to 60; less shortly after start). */
  window_seconds: number;
  requests_per_minute: number | null;
  average_response_time: number | null;
  error_rate: number | null;
  cpu_usage_percent: number;
}

const SNAPSHOT_MS = 5_000;
const WINDOW_MS = 60_000;
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * The last minute of requests and CPU, as differences between snapshots of running totals taken every five
 * seconds. The request totals are the metrics collector's (which measures every response); the window only
 * keeps the snapshots, so nothing is counted twice.
 */
export class SystemHealthWindow {
  private readonly snapshots: Snapshot[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the first snapshot was taken (start). */
  private startedAt: number | undefined;

  constructor(private readonly requestTotals: () => RequestTotals | undefined) {}

  start(): void {
    this.take();
    this.startedAt = this.snapshots[0]?.at;
    this.timer = setInterval(() => this.take(), SNAPSHOT_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  figures(): WindowFigures {
    const now = this.snapshot();
    const cutoff = now.at - WINDOW_MS;
    const inWindow = this.snapshots.filter((s) => s.at >= cutoff);
    const base = inWindow.find((s) => s.requests !== undefined) ?? inWindow[0] ?? now;
    const spanMs = Math.max(1, now.at - base.at);
    const cpuPercent = ((now.cpuUs - base.cpuUs) / 1000 / spanMs) * 100;
    let requests: Pick<WindowFigures, 'requests_per_minute' | 'average_response_time' | 'error_rate'> = {
      requests_per_minute: null,
      average_response_time: null,
      error_rate: null,
    };
    if (now.requests && base.requests) {
      const count = now.requests.count - base.requests.count;
      const sumMs = now.requests.sumMs - base.requests.sumMs;
      const errors = now.requests.errors - base.requests.errors;
      // A base taken when the window started (less than a minute ago) saw every response since then: the
      // count is exactly the last minute's. Scaling a few seconds' count up to a minute would report a rate
      // the platform never served (5 responses in 100 ms are not 3000 a minute).
      const sinceStart = base.at === this.startedAt && spanMs <= WINDOW_MS;
      requests = {
        requests_per_minute: sinceStart ? count : round((count / spanMs) * WINDOW_MS),
        average_response_time: count === 0 ? 0 : round(sumMs / count),
        error_rate: count === 0 ? 0 : round(errors / count, 4),
      };
    }
    return { window_seconds: round(spanMs / 1000, 1), ...requests, cpu_usage_percent: round(cpuPercent) };
  }

  private take(): void {
    this.snapshots.push(this.snapshot());
    const cutoff = Date.now() - WINDOW_MS - SNAPSHOT_MS;
    while (this.snapshots.length > 1 && (this.snapshots[0]?.at ?? 0) < cutoff) this.snapshots.shift();
  }

  private snapshot(): Snapshot {
    const cpu = process.cpuUsage();
    return { at: Date.now(), cpuUs: cpu.user + cpu.system, requests: this.requestTotals() };
  }
}

/** The metrics collector's running totals, when that service is part of the platform. */
export function collectorTotals(registry: ServiceRegistry): RequestTotals | undefined {
  if (!registry.has('metrics_collector')) return undefined;
  const collector = registry.get('metrics_collector');
  if (!(collector instanceof MetricsCollector)) return undefined;
  const { overall } = collector.requests;
  const totals: RequestTotals = { count: overall.count, sumMs: overall.sumMs, errors: 0 };
  for (const route of collector.requests.routeFigures()) {
    for (const [status, n] of route.byStatus) if (status >= 500) totals.errors += n;
  }
  return totals;
}
