import { getHeapStatistics } from 'node:v8';
import type { MetricsCollector } from './metrics-collector.js';

export interface Recommendation {
  severity: 'high' | 'medium' | 'low';
  category: 'latency' | 'errors' | 'memory' | 'cache';
  route: string | null;
  message: string;
  value: number;
  threshold: number;
}

const MIB = 1024 * 1024;
/** Routes with fewer responses than this are too thin a sample to judge their error share by. */
const MIN_SAMPLE = 10;

/**
 * `GET /api/v1/admin/system/performance`: per-route latency and errors since start on this instance, the
 * slowest routes, and recommendations drawn only from those figures.
 */
export function performanceReport(
  collector: MetricsCollector,
  options: { slowRouteP95Ms: number; cacheHitRate: number; cacheLookups: number },
) {
  const routes = collector.requests.routeFigures().map((r) => {
    let errors = 0;
    let serverErrors = 0;
    const byStatus: Record<string, number> = {};
    for (const [status, n] of r.byStatus) {
      byStatus[String(status)] = n;
      if (status >= 400) errors += n;
      if (status >= 500) serverErrors += n;
    }
    const l = r.latency;
    return {
      method: r.method,
      route: r.route,
      count: l.count,
      avg_ms: round(l.sumMs / l.count),
      p95_ms: round(l.quantile(0.95)),
      max_ms: round(l.maxMs),
      error_count: errors,
      server_error_count: serverErrors,
      error_rate: round(errors / l.count, 4),
      by_status: byStatus,
    };
  });
  routes.sort((a, b) => b.count - a.count);

  const totals = { requests: 0, errors: 0, byStatus: {} as Record<string, number> };
  for (const r of routes) {
    totals.requests += r.count;
    totals.errors += r.error_count;
    for (const [s, n] of Object.entries(r.by_status)) {
      if (Number(s) >= 400) totals.byStatus[s] = (totals.byStatus[s] ?? 0) + n;
    }
  }
  const errorsByRoute = routes
    .flatMap((r) =>
      Object.entries(r.by_status)
        .filter(([s]) => Number(s) >= 400)
        .map(([s, n]) => ({ method: r.method, route: r.route, status: Number(s), count: n })),
    )
    .sort((a, b) => b.count - a.count)
    .slice(0, 20);

  const heap = getHeapStatistics();
  const recommendations: Recommendation[] = [];
  const slow = options.slowRouteP95Ms;
  for (const r of routes) {
    const name = `${r.method} ${r.route}`;
    // A threshold of 0 turns the latency rule off.
    if (slow > 0 && r.p95_ms > slow) {
      recommendations.push({
        severity: r.p95_ms > slow * 5 ? 'high' : 'medium',
        category: 'latency',
        route: name,
        message: `${name}: p95 response time ${r.p95_ms} ms exceeds ${slow} ms over ${r.count} responses; profile its handler and the queries it runs`,
        value: r.p95_ms,
        threshold: slow,
      });
    }
    if (r.server_error_count > 0) {
      recommendations.push({
        severity: 'high',
        category: 'errors',
        route: name,
        message: `${name}: ${r.server_error_count} server errors; read the ERROR entries of the system log for their request ids`,
        value: r.server_error_count,
        threshold: 0,
      });
    }
    if (r.count >= MIN_SAMPLE && r.error_rate > 0.5 && r.server_error_count < r.error_count) {
      recommendations.push({
        severity: 'low',
        category: 'errors',
        route: name,
        message: `${name}: ${Math.round(r.error_rate * 100)} % of responses are client errors; check the clients calling it`,
        value: r.error_rate,
        threshold: 0.5,
      });
    }
  }
  const heapShare = heap.used_heap_size / heap.heap_size_limit;
  if (heapShare > 0.85) {
    recommendations.push({
      severity: 'high',
      category: 'memory',
      route: null,
      message: `The V8 heap is ${Math.round(heapShare * 100)} % full; raise --max-old-space-size or lower cache.l1_max_mb`,
      value: round(heapShare, 4),
      threshold: 0.85,
    });
  }
  if (options.cacheLookups >= 100 && options.cacheHitRate < 0.5) {
    recommendations.push({
      severity: 'low',
      category: 'cache',
      route: null,
      message: `The cache answers only ${Math.round(options.cacheHitRate * 100)} % of lookups; consider a larger cache.l1_max_mb or longer cache.default_ttl_seconds`,
      value: options.cacheHitRate,
      threshold: 0.5,
    });
  }

  return {
    generated_at: new Date().toISOString(),
    since: new Date(collector.startedAt).toISOString(),
    totals: {
      requests: totals.requests,
      errors: totals.errors,
      error_rate: totals.requests === 0 ? 0 : round(totals.errors / totals.requests, 4),
    },
    routes,
    slowest_routes: [...routes].sort((a, b) => b.p95_ms - a.p95_ms).slice(0, 5),
    errors: { total: totals.errors, by_status: totals.byStatus, by_route: errorsByRoute },
    memory: {
      rss_mb: round(process.memoryUsage.rss() / MIB),
      heap_used_mb: round(heap.used_heap_size / MIB),
      heap_limit_mb: round(heap.heap_size_limit / MIB),
    },
    thresholds: { slow_route_p95_ms: slow },
    recommendations,
  };
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
