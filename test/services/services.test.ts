import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_VERSION } from '../../src/system/platform-info.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('services API', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('lists every registered service with state, health, version, dependencies, dependents and figures', async () => {
    const res = await t.request('GET', '/api/v1/services', { token: admin });
    expect(res.statusCode).toBe(200);
    const services = res.data.data.services as any[];
    const names = services.map((s) => s.name);
    expect(names).toEqual(t.platform.context.registry.names());
    expect(names).toEqual(expect.arrayContaining(['database', 'cluster_state', 'task_runner', 'scheduler']));
    for (const s of services) {
      expect(s).toMatchObject({
        status: 'running',
        version: PLATFORM_VERSION,
        health: expect.stringMatching(/^(healthy|warning|unhealthy)$/),
        dependencies: expect.any(Array),
        dependents: expect.any(Array),
        config: expect.any(Object),
        recent_errors: expect.any(Array),
      });
      expect(Number.isInteger(s.metrics.uptime)).toBe(true);
      for (const k of ['requests_handled', 'events_processed', 'avg_response_time_ms', 'error_rate']) {
        expect(k in s.metrics).toBe(true);
        expect(s.metrics[k] === null || typeof s.metrics[k] === 'number').toBe(true);
      }
    }
    const runner = services.find((s) => s.name === 'task_runner');
    expect(runner).toMatchObject({ type: 'worker', dependencies: ['database', 'cluster_state'] });
    expect(runner.dependents).toContain('scheduler');
    expect(services.find((s) => s.name === 'database').dependents).toContain('task_runner');
  });

  it('reports the figures the service measured, not made-up ones', async () => {
    const read = async () =>
      (await t.request('GET', '/api/v1/services/task_runner', { token: admin })).data.data;
    const before = await read();
    t.platform.context.tasks.registerType('test_noop', async () => ({}));
    const task = await t.platform.context.tasks.start('test_noop', {});
    await t.platform.context.tasks.settled(task.id);
    const after = await read();
    expect(after.metrics.tasks_started).toBe(before.metrics.tasks_started + 1);
    expect(after.metrics.tasks_completed).toBe(before.metrics.tasks_completed + 1);
    expect(after.metrics.requests_handled).toBe(before.metrics.requests_handled + 1);
    expect(after.metrics.error_rate).toBe(0);
    expect(after.config.task_types).toContain('test_noop');
    // A figure the database does not measure is null, never an invented zero.
    const database = (await t.request('GET', '/api/v1/services/database', { token: admin })).data.data;
    expect(database.metrics.events_processed).toBeNull();
    expect(typeof database.metrics.response_time_ms).toBe('number');
  });

  it('masks secrets in a service config', async () => {
    t.platform.context.registry.register({
      name: 'test_secretive',
      type: 'test',
      dependencies: [],
      start: async () => {},
      stop: async () => {},
      health: async () => ({ status: 'healthy', checks: [] }),
      metrics: () => ({ requests_handled: 5 }),
      settings: () => ({
        url: 'postgres://app:hunter2@db.internal:5432/app',
        api_key: 'sk_live_abcdef',
        nested: { password: 'p4ss', retries: 3 },
        empty_secret: '',
      }),
    });
    const res = await t.request('GET', '/api/v1/services/test_secretive', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('hunter2');
    expect(res.body).not.toContain('sk_live');
    expect(res.body).not.toContain('p4ss');
    expect(res.data.data).toMatchObject({
      status: 'stopped',
      health: 'unhealthy',
      metrics: { uptime: 0, requests_handled: 5 },
      config: {
        url: 'postgres://********@db.internal:5432/app',
        api_key: '********',
        nested: { password: '********', retries: 3 },
        empty_secret: '',
      },
    });
  });

  it('answers 404 for an unknown service', async () => {
    for (const [method, url] of [
      ['GET', '/api/v1/services/nope'],
      ['POST', '/api/v1/services/nope/restart'],
    ] as const) {
      const res = await t.request(method, url, { token: admin });
      expect(res.statusCode).toBe(404);
      expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
    }
  });

  it('restarts a service with its dependents, audited, and its uptime starts again', async () => {
    const res = await t.request('POST', '/api/v1/services/task_runner/restart', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.data.data).toMatchObject({
      service: 'task_runner',
      action: 'restart',
      status: 'completed',
    });
    // The service first, then whatever depends on it (other modules' services too).
    expect(res.data.data.restarted[0]).toBe('task_runner');
    expect(res.data.data.restarted).toContain('scheduler');
    expect(res.data.data.restarted).not.toContain('database');
    expect(res.data.data.duration_ms).toBeGreaterThan(0);
    const registry = t.platform.context.registry;
    expect(registry.state('task_runner')).toBe('running');
    expect(registry.state('scheduler')).toBe('running');
    expect(registry.uptimeSeconds('task_runner')).toBe(0);
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'service.restart')
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      resource_type: 'service',
      resource_id: 'task_runner',
      admin_user: 'admin',
    });
  });

  it('shows a restarted service in /status at once, not the snapshot from before the restart', async () => {
    let health: 'healthy' | 'warning' = 'healthy';
    t.platform.context.registry.register({
      name: 'test_switch',
      type: 'test',
      dependencies: [],
      start: async () => {},
      stop: async () => {},
      health: async () => ({ status: health, checks: [] }),
      metrics: () => ({}),
      settings: () => ({}),
    });
    const restart = () => t.request('POST', '/api/v1/services/test_switch/restart', { token: admin });
    const shown = async () =>
      (await t.request('GET', '/api/v1/status', { token: admin })).data.data.components.test_switch.status;
    expect((await restart()).statusCode).toBe(200);
    expect(await shown()).toBe('healthy');
    health = 'warning';
    expect((await restart()).statusCode).toBe(200);
    expect(await shown()).toBe('warning');
  });

  it('loses no request that arrives while services restart', async () => {
    // A task that takes 300 ms to stop keeps the task runner stopping that long: a wide window.
    t.platform.context.tasks.registerType('test_slow_stop', async (task) => {
      await new Promise<void>((resolve) =>
        task.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await new Promise((r) => setTimeout(r, 300));
      task.signal.throwIfAborted();
      return {};
    });
    await t.platform.context.tasks.start('test_slow_stop', {});
    // Starting a task needs a running task runner (503 otherwise), so these fail if a request slips through.
    const startTask = () =>
      t.request('POST', '/api/v1/components/diagnostics', {
        token: admin,
        body: { components: ['memory'], background: true },
      });
    const read = (i: number) =>
      t.request('GET', ['/api/v1/tasks', '/api/v1/services/database', '/api/v1/status'][i % 3]!, {
        token: admin,
      });
    const before = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? startTask() : read(i)));
    const restart = t.request('POST', '/api/v1/services/database/restart', { token: admin });
    await new Promise((r) => setTimeout(r, 20));
    const during = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? startTask() : read(i)));
    const all = await Promise.all([...before, ...during]);
    const restarted = await restart;
    expect(restarted.statusCode).toBe(200);
    expect(all.map((r) => r.statusCode).filter((s) => s !== 200 && s !== 202)).toEqual([]);
    expect(restarted.data.data.restarted[0]).toBe('database');
    expect(restarted.data.data.restarted).toEqual(expect.arrayContaining(['task_runner', 'scheduler']));
    expect(restarted.data.data.duration_ms).toBeGreaterThanOrEqual(300);
    for (const name of t.platform.context.registry.names()) {
      if (!name.startsWith('test_')) expect(t.platform.context.registry.state(name)).toBe('running');
    }
  });

  it('lets read:system read services and keeps restarts to admin:services', async () => {
    const user = await t.createUser('svc-reader', ['user']);
    expect((await t.request('GET', '/api/v1/services', { token: user.access })).statusCode).toBe(200);
    const denied = await t.request('POST', '/api/v1/services/scheduler/restart', { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error).toMatchObject({
      code: 'AUTHORIZATION_DENIED',
      details: { required_permission: 'admin:services' },
    });
  });
});
