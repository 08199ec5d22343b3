import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('component diagnostics', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const run = (body: unknown) => t.request('POST', '/api/v1/components/diagnostics', { token: admin, body });
  const testOf = (data: any, component: string, name: string) =>
    data.results.find((r: any) => r.component === component).tests.find((x: any) => x.name === name);

  it('exercises the database with connectivity, performance and stress tests and leaves no data behind', async () => {
    const before = await t.platform.context.database.db.selectFrom('system_state').selectAll().execute();
    const res = await run({ components: ['database'], tests: ['connectivity', 'performance', 'stress'] });
    expect(res.statusCode).toBe(200);
    const data = res.data.data;
    expect(data).toMatchObject({ status: 'completed', summary: { failed: 0 } });
    expect(data.test_run_id).toMatch(/^diag_/);
    expect(data.duration_ms).toBeGreaterThan(0);
    expect(testOf(data, 'database', 'connectivity').details.response_time_ms).toEqual(expect.any(Number));
    const perf = testOf(data, 'database', 'performance');
    expect(perf.details).toMatchObject({ queries: 40, samples: 40 });
    expect(perf.details.p95_ms).toBeGreaterThanOrEqual(perf.details.p50_ms);
    const stress = testOf(data, 'database', 'stress');
    expect(stress.status).not.toBe('fail');
    expect(stress.details).toMatchObject({ operations: 200, errors: 0, rows_left_behind: 0 });
    expect(stress.details.operations_per_second).toBeGreaterThan(0);
    const after = await t.platform.context.database.db.selectFrom('system_state').selectAll().execute();
    expect(after.map((r) => r.key).sort()).toEqual(before.map((r) => r.key).sort());
  });

  it('exercises the shared state and the task runner, deleting its probe tasks', async () => {
    const res = await run({
      components: ['cluster_state', 'task_runner', 'memory'],
      tests: ['connectivity', 'performance', 'stress'],
    });
    expect(res.statusCode).toBe(200);
    const data = res.data.data;
    expect(data.summary.failed).toBe(0);
    const trip = testOf(data, 'cluster_state', 'performance').details;
    expect(trip.pubsub_round_trip.samples).toBe(10);
    expect(trip.lost_messages).toBe(0);
    expect(testOf(data, 'cluster_state', 'stress').details.pings).toBe(500);
    expect(testOf(data, 'task_runner', 'stress').details).toMatchObject({ tasks_run: 10, failed: 0 });
    expect(testOf(data, 'memory', 'stress').status).toBe('skipped');
    const probes = await t.request('GET', '/api/v1/tasks?type=diagnostics_probe', { token: admin });
    expect(probes.data.data.pagination.total).toBe(0);
  });

  it('times the health check of a service without diagnostics of its own, and defaults to all components', async () => {
    const res = await run({});
    expect(res.statusCode).toBe(200);
    const components = res.data.data.results.map((r: { component: string }) => r.component);
    expect(components).toEqual([...t.platform.context.registry.names(), 'memory']);
    for (const r of res.data.data.results)
      expect(r.tests.map((x: { name: string }) => x.name)).toEqual(['connectivity']);
    const scheduler = testOf(res.data.data, 'scheduler', 'connectivity');
    expect(scheduler.details).toMatchObject({ method: 'health_check', checks_run: 1 });
  });

  it('refuses an unknown component with a clear error', async () => {
    const res = await run({ components: ['database', 'flux_capacitor'] });
    expect(res.statusCode).toBe(422);
    expect(res.data.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { field: 'components', unknown: ['flux_capacitor'] },
    });
    expect(res.data.error.details.available).toContain('database');
    const bad = await run({ tests: ['meltdown'] });
    expect(bad.statusCode).toBe(422);
  });

  it('runs in the background as a diagnostics task whose result is the report', async () => {
    const res = await run({ components: ['database'], tests: ['connectivity'], background: true });
    expect(res.statusCode).toBe(202);
    const { test_run_id, task_id, task, status } = res.data.data;
    expect(status).toBe('running');
    expect(task_id).toBe(test_run_id);
    expect(task).toMatchObject({ id: test_run_id, type: 'diagnostics', status: 'running' });
    const read = async () => (await t.request('GET', `/api/v1/tasks/${task_id}`, { token: admin })).data.data;
    expect(await eventually(async () => (await read()).status === 'completed', 10_000)).toBe(true);
    const done = await read();
    expect(done.result).toMatchObject({
      test_run_id,
      status: 'completed',
      results: [{ component: 'database' }],
    });
  });

  it('keeps diagnostics to admin:services', async () => {
    const user = await t.createUser('diag-user', ['user']);
    const res = await t.request('POST', '/api/v1/components/diagnostics', { token: user.access, body: {} });
    expect(res.statusCode).toBe(403);
    expect(res.data.error.code).toBe('AUTHORIZATION_DENIED');
  });
});
