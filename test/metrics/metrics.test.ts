import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheService } from '../../src/cache/cache-service.js';
import type { MetricsCollector } from '../../src/metrics/metrics-collector.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const collectorOf = (t: TestPlatform) =>
  t.platform.context.registry.get('metrics_collector') as MetricsCollector;
const cacheOf = (t: TestPlatform) => t.platform.context.registry.get('cache') as CacheService;

describe('metrics from a known workload', () => {
  let t: TestPlatform;
  let admin: string;
  let summaryBefore: any;
  let sampled: Record<string, number>;
  beforeAll(async () => {
    // The timer never fires during the test: samples are taken with sampleNow() at known points.
    t = await startPlatform({ metrics: { sample_interval_seconds: 3600 } });
    admin = await t.adminToken();
    summaryBefore = (await t.request('GET', '/api/v1/metrics/summary', { token: admin })).data.data;
    await collectorOf(t).sampleNow();
    // The workload: 30 successes, 10 unknown routes (404), 10 invalid queries (422).
    for (let i = 0; i < 30; i++) await t.request('GET', '/api/v1/health');
    for (let i = 0; i < 10; i++) await t.request('GET', `/api/v1/no-such-route-${i}`, { token: admin });
    for (let i = 0; i < 10; i++) await t.request('GET', '/api/v1/metrics?resolution=2m', { token: admin });
    sampled = (await collectorOf(t).sampleNow()) as Record<string, number>;
  });
  afterAll(async () => {
    await t.close();
  });

  it('samples exactly the responses of the interval', () => {
    expect(sampled['request_count']).toBe(50);
    expect(sampled['error_count']).toBe(20);
    expect(sampled['server_error_count']).toBe(0);
    expect(sampled['error_rate']).toBeCloseTo(0.4, 5);
    expect(sampled['requests_per_second']).toBeGreaterThan(0);
    expect(sampled['response_time_p95_ms']).toBeGreaterThanOrEqual(sampled['response_time_p50_ms']!);
    expect(sampled['memory_usage_mb']).toBeGreaterThan(10);
    expect(sampled['cpu_usage_percent']).toBeGreaterThanOrEqual(0);
  });

  it('counts the workload exactly in the summary, by status', async () => {
    const res = await t.request('GET', '/api/v1/metrics/summary', { token: admin });
    expect(res.statusCode).toBe(200);
    const after = res.data.data;
    // The workload plus the first summary request (measured once its response was sent).
    expect(after.requests.total - summaryBefore.requests.total).toBe(51);
    expect(after.errors.total - summaryBefore.errors.total).toBe(20);
    expect((after.errors.by_status['404'] ?? 0) - (summaryBefore.errors.by_status['404'] ?? 0)).toBe(10);
    expect((after.errors.by_status['422'] ?? 0) - (summaryBefore.errors.by_status['422'] ?? 0)).toBe(10);
    expect(after.errors.rate).toBeCloseTo(after.errors.total / after.requests.total, 3);
    expect(after.requests.success_rate).toBeCloseTo(1 - after.errors.rate, 3);
    expect(after.requests.p99_response_time_ms).toBeGreaterThanOrEqual(after.requests.p95_response_time_ms);
    expect(after.requests.avg_response_time_ms).toBeGreaterThan(0);
    expect(after.resources.peak_memory_mb).toBeGreaterThanOrEqual(after.resources.avg_memory_mb * 0.5);
    expect(after.resources.disk_usage_gb).toBeGreaterThan(0);
    expect(after.resources.avg_cpu_percent).toBeGreaterThanOrEqual(0);
  });

  it('shows the sampled figures in the series', async () => {
    const res = await t.request('GET', '/api/v1/metrics?metrics=request_count,error_count', { token: admin });
    expect(res.statusCode).toBe(200);
    const { metrics, time_range } = res.data.data;
    expect(Object.keys(metrics).sort()).toEqual(['error_count', 'request_count']);
    expect(Date.parse(time_range.end) - Date.parse(time_range.start)).toBe(3_600_000);
    const sum = (points: { value: number }[]) => points.reduce((a, p) => a + p.value, 0);
    // Both samples: the login and first summary before the workload, then the 50 requests.
    expect(sum(metrics.request_count)).toBe(52);
    expect(sum(metrics.error_count)).toBe(20);
    for (const p of metrics.request_count) expect(new Date(p.timestamp).getUTCSeconds()).toBe(0);
  });

  it('shows the counter in the Prometheus text with the right value', async () => {
    const res = await t.request('GET', '/metrics', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toContain('http_requests_total{method="GET",route="/api/v1/health",status="200"} 30');
    expect(res.body).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 10');
    expect(res.body).toContain('http_requests_total{method="GET",route="/api/v1/metrics",status="422"} 10');
    expect(res.body).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/health",status="200"\} 30/,
    );
    expect(res.body).toMatch(/process_cpu_seconds_total \d/);
    expect(res.body).toMatch(/process_resident_memory_bytes \d+/);
  });

  it('requires read:metrics for Prometheus text unless it is public', async () => {
    expect((await t.request('GET', '/metrics')).statusCode).toBe(401);
    const user = await t.createUser('metrics-user', ['user']);
    const denied = await t.request('GET', '/metrics', { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('AUTHORIZATION_DENIED');
    const moderator = await t.createUser('metrics-moderator', ['moderator']);
    expect((await t.request('GET', '/metrics', { token: moderator.access })).statusCode).toBe(200);
    expect((await t.request('GET', '/api/v1/metrics/summary', { token: moderator.access })).statusCode).toBe(
      200,
    );
    expect((await t.request('GET', '/api/v1/metrics', { token: user.access })).statusCode).toBe(403);
  });

  it('builds the performance report and its recommendations from the same figures', async () => {
    // A threshold far below any real response time, so every measured route is reported slow.
    const res = await t.request('GET', '/api/v1/admin/system/performance?slow_route_p95_ms=0.001', {
      token: admin,
    });
    expect(res.statusCode).toBe(200);
    const report = res.data.data;
    const health = report.routes.find((r: any) => r.method === 'GET' && r.route === '/api/v1/health');
    expect(health).toMatchObject({ count: 30, error_count: 0, error_rate: 0 });
    expect(health.max_ms).toBeGreaterThanOrEqual(health.avg_ms);
    const invalid = report.routes.find((r: any) => r.method === 'GET' && r.route === '/api/v1/metrics');
    expect(invalid.by_status['422']).toBe(10);
    expect(report.errors.by_status['404']).toBe(10);
    expect(report.errors.by_route).toContainEqual({
      method: 'GET',
      route: 'unmatched',
      status: 404,
      count: 10,
    });
    expect(report.slowest_routes.length).toBeGreaterThan(0);
    expect(report.thresholds.slow_route_p95_ms).toBe(0.001);
    const latency = report.recommendations.filter((r: any) => r.category === 'latency');
    expect(latency.map((r: any) => r.route)).toContain('GET /api/v1/health');
    // 10 of 10 /metrics responses were 422: the client-error recommendation names it.
    expect(report.recommendations).toContainEqual(
      expect.objectContaining({ category: 'errors', route: 'GET /api/v1/metrics', severity: 'low' }),
    );
    // The configured threshold (1000 ms) flags none of these fast routes.
    const configured = await t.request('GET', '/api/v1/admin/system/performance', { token: admin });
    expect(configured.data.data.thresholds.slow_route_p95_ms).toBe(1000);
    expect(configured.data.data.recommendations.filter((r: any) => r.category === 'latency')).toEqual([]);
  });

  it('filters admin series by name and refuses unknown names', async () => {
    const res = await t.request(
      'GET',
      '/api/v1/admin/system/metrics?metrics=memory_usage_mb&metrics=cpu_usage_percent&resolution=5m',
      { token: admin },
    );
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.data.data.metrics).sort()).toEqual(['cpu_usage_percent', 'memory_usage_mb']);
    expect(res.data.data.time_range.resolution).toBe('5m');
    expect(res.data.data.metrics.memory_usage_mb.length).toBeGreaterThanOrEqual(1);
    const bad = await t.request('GET', '/api/v1/admin/system/metrics?metrics=bogus', { token: admin });
    expect(bad.statusCode).toBe(422);
    expect(bad.data.error.details).toMatchObject({ field: 'metrics', unknown: ['bogus'] });
  });

  it('refuses more than 1000 points per series and inverted ranges with 422', async () => {
    const end = new Date();
    const start = new Date(end.getTime() - 2 * 86_400_000);
    const tooMany = await t.request(
      'GET',
      `/api/v1/metrics?start_time=${start.toISOString()}&end_time=${end.toISOString()}&resolution=1m`,
      { token: admin },
    );
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'resolution' } });
    const fine = await t.request(
      'GET',
      `/api/v1/metrics?start_time=${start.toISOString()}&end_time=${end.toISOString()}&resolution=1h`,
      { token: admin },
    );
    expect(fine.statusCode).toBe(200);
    const inverted = await t.request(
      'GET',
      `/api/v1/metrics?start_time=${end.toISOString()}&end_time=${start.toISOString()}`,
      { token: admin },
    );
    expect(inverted.statusCode).toBe(422);
    const badTime = await t.request('GET', '/api/v1/metrics?start_time=yesterday', { token: admin });
    expect(badTime.statusCode).toBe(422);
  });

  it('answers repeated series queries from api_responses and never serves them stale after a sample', async () => {
    const cache = cacheOf(t);
    const url = '/api/v1/metrics?metrics=request_count&resolution=15m';
    const cached = () =>
      cache
        .l1()
        .keys()
        .filter((k) => k.startsWith('api_responses:metrics:15m:'));
    expect(cached()).toHaveLength(0);
    const first = await t.request('GET', url, { token: admin });
    expect(cached()).toHaveLength(1);
    const second = await t.request('GET', url, { token: admin });
    expect(second.data.data.metrics).toEqual(first.data.data.metrics);
    const total = (r: typeof first) =>
      r.data.data.metrics.request_count.reduce((a: number, p: { value: number }) => a + p.value, 0);
    // Two requests since the last sample; a new sample must show up at once, not after the cache expires.
    const written = (await collectorOf(t).sampleNow()) as Record<string, number>;
    expect(cached()).toHaveLength(0);
    const third = await t.request('GET', url, { token: admin });
    expect(total(third)).toBe(total(first) + written['request_count']!);
    expect(written['request_count']).toBeGreaterThanOrEqual(2);
  });
});

describe('events per second', () => {
  it('samples the event bus throughput when events were emitted', async () => {
    const t = await startPlatform({ metrics: { sample_interval_seconds: 3600 } });
    try {
      const admin = await t.adminToken();
      const collector = collectorOf(t);
      await collector.sampleNow();
      for (let i = 0; i < 5; i++) {
        const res = await t.request('POST', '/api/v1/events', {
          token: admin,
          body: { event_type: 'metrics.test', data: { i } },
        });
        expect(res.statusCode).toBe(201);
      }
      const values = (await collector.sampleNow()) as Record<string, number>;
      expect(values['events_per_second']).toBeGreaterThan(0);
      const idle = (await collector.sampleNow()) as Record<string, number>;
      expect(idle['events_per_second']).toBe(0);
    } finally {
      await t.close();
    }
  }, 30_000);
});

describe('public Prometheus endpoint', () => {
  it('serves /metrics without credentials when metrics.public_prometheus is true', async () => {
    const t = await startPlatform({ metrics: { public_prometheus: true } });
    try {
      const res = await t.request('GET', '/metrics');
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('# TYPE http_requests_total counter');
    } finally {
      await t.close();
    }
  }, 30_000);
});
