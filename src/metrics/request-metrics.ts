import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LatencyHistogram } from './latency-histogram.js';

/** What the requests of one sampling interval looked like (see MetricsCollector.sampleNow). */
export interface IntervalWindow {
  count: number;
  clientErrors: number;
  serverErrors: number;
  /** Durations in ms: all of them, or a uniform sample of 20 000 when there were more. */
  durationsMs: number[];
}

export interface RouteFigures {
  method: string;
  route: string;
  byStatus: Map<number, number>;
  latency: LatencyHistogram;
}

const RESERVOIR = 20_000;
const MIB = 1024 * 1024;

/**
 * Measures every HTTP response: counts by method, route pattern and status, response times per route and
 * overall (log-bucketed, for quantiles), a Prometheus latency histogram, and process CPU and memory gauges.
 * Only the histogram is fed per request; the request counter and the gauges are filled when Prometheus
 * reads them, which keeps this on the hot path of every request cheap.
 * Each platform has its own prom-client Registry, so several platforms in one process do not collide.
 */
export class RequestMetrics {
  readonly registry = new Registry();
  readonly overall = new LatencyHistogram();
  private readonly duration: Histogram<'method' | 'route' | 'status'>;
  private readonly routes = new Map<string, RouteFigures>();
  private window: IntervalWindow = emptyWindow();
  private windowSeen = 0;

  constructor() {
    const registers = [this.registry];
    const routes = this.routes;
    new Counter({
      name: 'http_requests_total',
      help: 'HTTP responses sent, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      registers,
      collect() {
        this.reset();
        for (const r of routes.values()) {
          for (const [status, n] of r.byStatus) {
            this.inc({ method: r.method, route: r.route, status: String(status) }, n);
          }
        }
      },
    });
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request start to response sent, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    // Counted from zero so the counter holds the process's CPU time since it started, as Prometheus expects.
    let lastCpu = { user: 0, system: 0 };
    new Counter({
      name: 'process_cpu_seconds_total',
      help: 'User and system CPU time spent by the process, in seconds',
      registers,
      collect() {
        const now = process.cpuUsage();
        this.inc((now.user - lastCpu.user + now.system - lastCpu.system) / 1e6);
        lastCpu = now;
      },
    });
    new Gauge({
      name: 'process_resident_memory_bytes',
      help: 'Resident set size of the process, in bytes',
      registers,
      collect() {
        this.set(process.memoryUsage.rss());
      },
    });
    new Gauge({
      name: 'nodejs_heap_used_bytes',
      help: 'V8 heap in use, in bytes',
      registers,
      collect() {
        this.set(process.memoryUsage().heapUsed);
      },
    });
    new Gauge({
      name: 'process_uptime_seconds',
      help: 'Seconds since the process started',
      registers,
      collect() {
        this.set(process.uptime());
      },
    });
  }

  /** Called once per response (onResponse hook). */
  record(method: string, route: string, status: number, durationMs: number): void {
    this.duration.observe({ method, route, status: String(status) }, durationMs / 1000);
    this.overall.record(durationMs);

    const key = `${method} ${route}`;
    let figures = this.routes.get(key);
    if (!figures) {
      figures = { method, route, byStatus: new Map(), latency: new LatencyHistogram() };
      this.routes.set(key, figures);
    }
    figures.latency.record(durationMs);
    figures.byStatus.set(status, (figures.byStatus.get(status) ?? 0) + 1);

    const w = this.window;
    w.count += 1;
    if (status >= 500) w.serverErrors += 1;
    else if (status >= 400) w.clientErrors += 1;
    // Reservoir sampling keeps interval percentiles exact up to 20 000 requests and unbiased beyond.
    this.windowSeen += 1;
    if (w.durationsMs.length < RESERVOIR) w.durationsMs.push(durationMs);
    else {
      const slot = Math.floor(Math.random() * this.windowSeen);
      if (slot < RESERVOIR) w.durationsMs[slot] = durationMs;
    }
  }

  /** The requests since the previous call; starts a new interval. */
  takeWindow(): IntervalWindow {
    const w = this.window;
    this.window = emptyWindow();
    this.windowSeen = 0;
    return w;
  }

  routeFigures(): RouteFigures[] {
    return [...this.routes.values()];
  }

  prometheusText(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

function emptyWindow(): IntervalWindow {
  return { count: 0, clientErrors: 0, serverErrors: 0, durationsMs: [] };
}

export const rssMb = (): number => process.memoryUsage.rss() / MIB;
