import { getHeapStatistics } from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('component and system health', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it("gives a component's response time as its check took, also when the check's result is reused", async () => {
    const databaseTime = async () =>
      (await t.request('GET', '/api/v1/components/health', { token: admin })).data.data.components.find(
        (c: { name: string }) => c.name === 'database',
      );
    // The first answer runs the check; the second, sent at once, reuses its result (one second, see the registry)
    // and so its time: not the microseconds of looking it up.
    const first = await databaseTime();
    const second = await databaseTime();
    const connectivity = second.checks.find((c: { name: string }) => c.name === 'connectivity');
    expect(second.response_time_ms).toBe(first.response_time_ms);
    expect(second.response_time_ms).toBeGreaterThanOrEqual(connectivity.response_time_ms);
  });

  it('reports every service and memory with the checks each measured', async () => {
    const res = await t.request('GET', '/api/v1/components/health', { token: admin });
    expect(res.statusCode).toBe(200);
    const { overall_status, components } = res.data.data;
    expect(components.map((c: { name: string }) => c.name)).toEqual([
      ...t.platform.context.registry.names(),
      'memory',
    ]);
    const statuses = components.map((c: { status: string }) => c.status);
    const worst = statuses.includes('unhealthy')
      ? 'unhealthy'
      : statuses.includes('warning')
        ? 'warning'
        : 'healthy';
    expect(overall_status).toBe(worst);

    const database = components.find((c: { name: string }) => c.name === 'database');
    expect(database.status).toBe('healthy');
    const connectivity = database.checks.find((c: { name: string }) => c.name === 'connectivity');
    expect(connectivity).toMatchObject({ status: 'pass', response_time_ms: expect.any(Number) });
    expect(database.checks.find((c: { name: string }) => c.name === 'query_time').avg_query_time_ms).toEqual(
      expect.any(Number),
    );

    const memory = components.find((c: { name: string }) => c.name === 'memory');
    const heap = memory.checks.find((c: { name: string }) => c.name === 'heap');
    // The same process: V8's own heap limit (no health.memory_limit_mb set), and a heap in use that fits in
    // it. The heap in use moves with every collection (test files share a worker), so no closer bound.
    expect(heap.limit_mb).toBeCloseTo(getHeapStatistics().heap_size_limit / 1024 / 1024, 1);
    expect(heap.current_mb).toBeGreaterThan(1);
    expect(heap.limit_mb).toBeGreaterThan(heap.current_mb);
    expect(heap.usage_percent).toBeCloseTo((heap.current_mb / heap.limit_mb) * 100, 0);

    const runner = components.find((c: { name: string }) => c.name === 'task_runner');
    expect(runner.checks.map((c: { name: string }) => c.name)).toEqual([
      'storage',
      'lease_heartbeat',
      'running_tasks',
    ]);
  });

  it('answers the admin system health with uptime, components and the last minute of requests', async () => {
    for (let i = 0; i < 10; i++) await t.request('GET', '/api/v1/tasks', { token: admin });
    await t.request('GET', '/api/v1/no-such-route', { token: admin });
    const res = await t.request('GET', '/api/v1/admin/system/health', { token: admin });
    expect(res.statusCode).toBe(200);
    const data = res.data.data;
    expect(data).toMatchObject({
      overall_status: expect.stringMatching(/^(healthy|warning|unhealthy)$/),
      timestamp: expect.any(String),
      uptime_seconds: expect.any(Number),
    });
    const names = data.components.map((c: { name: string }) => c.name);
    expect(names).toEqual(expect.arrayContaining(['database', 'task_runner', 'scheduler', 'memory']));
    for (const c of data.components) {
      expect(c.response_time_ms).toEqual(expect.any(Number));
      expect(Array.isArray(c.details.checks)).toBe(true);
    }
    const m = data.metrics;
    // At least the eleven requests above, measured by the metrics collector.
    expect(m.requests_per_minute).toBeGreaterThanOrEqual(11);
    expect(m.average_response_time).toBeGreaterThan(0);
    expect(m.error_rate).toBe(0);
    expect(m.memory_usage_mb).toBeGreaterThan(10);
    expect(m.cpu_usage_percent).toBeGreaterThanOrEqual(0);
    expect(m.window_seconds).toBeGreaterThan(0);
  });

  it('reports memory against the configured limit', async () => {
    await t.request('PUT', '/api/v1/config', { token: admin, body: { health: { memory_limit_mb: 1 } } });
    try {
      const res = await t.request('GET', '/api/v1/components/health', { token: admin });
      const memory = res.data.data.components.find((c: { name: string }) => c.name === 'memory');
      expect(memory.status).toBe('unhealthy');
      expect(memory.checks[0]).toMatchObject({ name: 'heap', status: 'fail', limit_mb: 1 });
      expect(res.data.data.overall_status).toBe('unhealthy');
    } finally {
      await t.request('PUT', '/api/v1/config', { token: admin, body: { health: { memory_limit_mb: 0 } } });
    }
  });

  it('keeps the system health to admins and the component health to read:system', async () => {
    const user = await t.createUser('health-reader', ['user']);
    expect((await t.request('GET', '/api/v1/components/health', { token: user.access })).statusCode).toBe(
      200,
    );
    const denied = await t.request('GET', '/api/v1/admin/system/health', { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('ADMIN_REQUIRED');
  });
});
