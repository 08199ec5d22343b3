import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';

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
  count: number;
  sumMs: number;
  maxMs: number;
  byStatus: Map<number, number>;
}

const RESERVOIR = 20_000;
const MIB = 1024 * 1024;

/**
 * Measures every HTTP response: a Prometheus counter and latency histogram by method, route and status,
 * latency summaries (t-digest quantiles) overall and per route, and process CPU and memory gauges.
 * Each platform has its own prom-client Registry, so several platforms in one process do not collide.
 */
export class RequestMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly duration: Histogram<'method' | 'route' | 'status'>;
  private readonly latency: Summary;
  private readonly routeLatency: Summary<'method' | 'route'>;
  private readonly routes = new Map<string, RouteFigures>();
  private window: IntervalWindow = emptyWindow();
  private windowSeen = 0;

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP responses sent, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request start to response sent, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.latency = new Summary({
      name: 'http_request_latency_seconds',
      help: 'Latency quantiles of every response since start',
      percentiles: [0.5, 0.9, 0.95, 0.99],
      registers,
    });
    this.routeLatency = new Summary({
      name: 'http_route_latency_seconds',
      help: 'Latency quantiles per route since start',
      labelNames: ['method', 'route'],
      percentiles: [0.5, 0.95, 0.99],
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
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.duration.observe(labels, durationMs / 1000);
    this.latency.observe(durationMs / 1000);
    this.routeLatency.observe({ method, route }, durationMs / 1000);

    const key = `${method} ${route}`;
    let figures = this.routes.get(key);
    if (!figures) {
      figures = { method, route, count: 0, sumMs: 0, maxMs: 0, byStatus: new Map() };
      this.routes.set(key, figures);
    }
    figures.count += 1;
    figures.sumMs += durationMs;
    figures.maxMs = Math.max(figures.maxMs, durationMs);
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

  /** Overall latency quantiles in ms since start (t-digest), keyed by quantile. */
  async quantilesMs(): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (const v of (await this.latency.get()).values) {
      const q = v.labels['quantile'];
      if (typeof q === 'number' && Number.isFinite(v.value)) out.set(q, v.value * 1000);
    }
    return out;
  }

  /** Per-route latency quantiles in ms, keyed by `METHOD route` then quantile. */
  async routeQuantilesMs(): Promise<Map<string, Map<number, number>>> {
    const out = new Map<string, Map<number, number>>();
    for (const v of (await this.routeLatency.get()).values) {
      const q = (v.labels as Record<string, string | number | undefined>)['quantile'];
      if (typeof q !== 'number' || !Number.isFinite(v.value)) continue;
      const key = `${v.labels['method']} ${v.labels['route']}`;
      let m = out.get(key);
      if (!m) {
        m = new Map();
        out.set(key, m);
      }
      m.set(q, v.value * 1000);
    }
    return out;
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
