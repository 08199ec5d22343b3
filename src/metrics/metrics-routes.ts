import { Type } from '@sinclair/typebox';
import type { CacheService } from '../cache/cache-service.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import type { RateLimiter } from '../http/rate-limiter.js';
import type { MetricFamily } from '../kernel/metric-family.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import type { Database } from '../storage/database.js';
import { diskUsageBytes } from './disk-usage.js';
import { METRIC_NAMES, type MetricName, RESOLUTIONS } from './metric-series.js';
import type { MetricsCollector } from './metrics-collector.js';
import { metricsSummary } from './metrics-summary.js';
import { performanceReport } from './performance-report.js';
import { prometheusText } from './prometheus-text.js';
import { serviceFamilies } from './service-families.js';
import { bucketRange, invalidQuery } from './time-buckets.js';

const HOUR_MS = 3_600_000;

const SeriesQuery = Type.Object(
  {
    start_time: Type.Optional(
      Type.String({ format: 'date-time', description: 'Default: end_time minus one hour' }),
    ),
    end_time: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now' })),
    resolution: Type.Optional(
      Type.Union(
        Object.keys(RESOLUTIONS).map((r) => Type.Literal(r)),
        { default: '1m', description: 'Bucket width; at most 1000 buckets per series' },
      ),
    ),
    metrics: Type.Optional(
      Type.Array(Type.String(), {
        description: `Series names (repeated or comma-separated); default all: ${METRIC_NAMES.join(', ')}`,
      }),
    ),
  },
  { additionalProperties: false },
);

const Point = Type.Object({ timestamp: Timestamp, value: Type.Number() });
const SeriesView = Type.Object({
  time_range: Type.Object({ start: Timestamp, end: Timestamp, resolution: Type.String() }),
  metrics: Type.Record(Type.String(), Type.Array(Point), {
    description: 'Series name → points, oldest first; buckets without samples are left out',
  }),
});

const SummaryView = Type.Object({
  requests: Type.Object({
    total: Type.Integer(),
    success_rate: Type.Number(),
    avg_response_time_ms: Type.Number(),
    p95_response_time_ms: Type.Number(),
    p99_response_time_ms: Type.Number(),
  }),
  errors: Type.Object({
    total: Type.Integer(),
    rate: Type.Number(),
    by_status: Type.Record(Type.String(), Type.Integer(), { description: 'Status code → responses' }),
  }),
  resources: Type.Object({
    avg_cpu_percent: Type.Number(),
    avg_memory_mb: Type.Number(),
    peak_memory_mb: Type.Number(),
    disk_usage_gb: Type.Number(),
  }),
});

const RouteRow = Type.Object({
  method: Type.String(),
  route: Type.String(),
  count: Type.Integer(),
  avg_ms: Type.Number(),
  p95_ms: Type.Number(),
  max_ms: Type.Number(),
  error_count: Type.Integer(),
  server_error_count: Type.Integer(),
  error_rate: Type.Number(),
  by_status: Type.Record(Type.String(), Type.Integer()),
});
const PerformanceView = Type.Object({
  generated_at: Timestamp,
  since: Timestamp,
  totals: Type.Object({ requests: Type.Integer(), errors: Type.Integer(), error_rate: Type.Number() }),
  routes: Type.Array(RouteRow),
  slowest_routes: Type.Array(RouteRow),
  errors: Type.Object({
    total: Type.Integer(),
    by_status: Type.Record(Type.String(), Type.Integer()),
    by_route: Type.Array(
      Type.Object({
        method: Type.String(),
        route: Type.String(),
        status: Type.Integer(),
        count: Type.Integer(),
      }),
    ),
  }),
  memory: Type.Object({ rss_mb: Type.Number(), heap_used_mb: Type.Number(), heap_limit_mb: Type.Number() }),
  thresholds: Type.Object({ slow_route_p95_ms: Type.Number() }),
  recommendations: Type.Array(
    Type.Object({
      severity: Type.String(),
      category: Type.String(),
      route: Type.Union([Type.String(), Type.Null()]),
      message: Type.String(),
      value: Type.Number(),
      threshold: Type.Number(),
    }),
  ),
});

type SeriesQueryValue = typeof SeriesQuery.static;

/** Reads the range, resolution and names of a series query, refusing what cannot be answered. */
function seriesRequest(q: SeriesQueryValue) {
  const { startMs, endMs, resolution } = bucketRange(q, {
    spanMs: HOUR_MS,
    resolution: '1m',
    what: 'points per series',
  });
  const wanted = (q.metrics ?? [])
    .flatMap((m) => m.split(','))
    .map((m) => m.trim())
    .filter(Boolean);
  const unknown = wanted.filter((m) => !(METRIC_NAMES as string[]).includes(m));
  if (unknown.length > 0) {
    throw invalidQuery('metrics', 'unknown series', `Unknown series: ${unknown.join(', ')}`, {
      unknown,
      available: METRIC_NAMES,
    });
  }
  const names = wanted.length > 0 ? ([...new Set(wanted)] as MetricName[]) : METRIC_NAMES;
  return { startMs, endMs, resolution, names };
}

export function registerMetricsRoutes(
  app: App,
  deps: {
    collector: MetricsCollector;
    cache: CacheService;
    database: Database;
    cfg: () => PlatformConfig;
    registry: ServiceRegistry;
    rateLimiter: RateLimiter;
  },
): void {
  const { collector } = deps;

  const series = async (q: SeriesQueryValue) => {
    const r = seriesRequest(q);
    return {
      time_range: {
        start: new Date(r.startMs).toISOString(),
        end: new Date(r.endMs).toISOString(),
        resolution: r.resolution,
      },
      metrics: await collector.series(r.names, r.startMs, r.endMs, r.resolution),
    };
  };

  app.get(
    '/api/v1/metrics',
    {
      config: { access: access.permission('read:metrics') },
      schema: {
        operationId: 'getMetrics',
        tags: ['metrics'],
        summary:
          'Sampled metric series over a time range, aggregated to a resolution (default: last hour, 1m)',
        querystring: SeriesQuery,
        response: { 200: Envelope(SeriesView) },
      },
    },
    async (request) => ok(request, await series(request.query)),
  );

  app.get(
    '/api/v1/metrics/summary',
    {
      config: { access: access.permission('read:metrics') },
      schema: {
        operationId: 'getMetricsSummary',
        tags: ['metrics'],
        summary: "This instance's requests, errors and resources since start",
        response: { 200: Envelope(SummaryView) },
      },
    },
    async (request) => {
      const disk = await diskUsageBytes(deps.database, deps.cfg().storage.data_dir);
      return ok(request, metricsSummary(collector, disk));
    },
  );

  app.get(
    '/api/v1/admin/system/metrics',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'adminGetSystemMetrics',
        tags: ['admin', 'metrics'],
        summary: 'Sampled metric series, filtered by name, over a time range and resolution',
        querystring: SeriesQuery,
        response: { 200: Envelope(SeriesView) },
      },
    },
    async (request) => ok(request, await series(request.query)),
  );

  app.get(
    '/api/v1/admin/system/performance',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'adminGetPerformanceReport',
        tags: ['admin', 'metrics'],
        summary: 'Per-route latency and errors, slowest routes, and recommendations drawn from them',
        querystring: Type.Object(
          {
            slow_route_p95_ms: Type.Optional(
              Type.Number({
                minimum: 0,
                maximum: 600_000,
                description:
                  'p95 above which a route is reported slow; default `metrics.slow_route_p95_ms`, 0 = off',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(PerformanceView) },
      },
    },
    async (request) => {
      const cache = deps.cache.metrics();
      return ok(
        request,
        performanceReport(collector, {
          slowRouteP95Ms: request.query.slow_route_p95_ms ?? deps.cfg().metrics.slow_route_p95_ms,
          cacheHitRate: cache['hit_rate'] ?? 0,
          cacheLookups: (cache['hits'] ?? 0) + (cache['misses'] ?? 0),
        }),
      );
    },
  );

  const open = deps.cfg().metrics.public_prometheus;
  app.get(
    '/metrics',
    {
      config: { access: open ? access.public() : access.permission('read:metrics') },
      schema: {
        operationId: 'getPrometheusMetrics',
        tags: ['metrics'],
        summary: 'Prometheus text exposition (not enveloped)',
        description:
          'Public when `metrics.public_prometheus` is true (read at start), else requires `read:metrics`. ' +
          'Prometheus can send an API key as `Authorization: Bearer plat_…` (its `authorization` setting). ' +
          'The families are listed in docs/operations.md.',
        response: {
          200: {
            description: 'Prometheus text format 0.0.4',
            content: { 'text/plain': { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => {
      reply.type(collector.requests.contentType);
      const refusals = deps.rateLimiter.refusals;
      const families: MetricFamily[] = [
        ...(await serviceFamilies(deps.registry)),
        {
          name: 'platform_rate_limit_refusals_total',
          help: 'Requests refused by the rate limits on this instance, by bucket',
          type: 'counter',
          samples: Object.entries(refusals).map(([bucket, value]) => ({ labels: { bucket }, value })),
        },
      ];
      return (await collector.requests.prometheusText()) + prometheusText(families);
    },
  );
}
