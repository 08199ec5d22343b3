import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('system restart', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  const announced: PlatformEventMap['platform.event'][] = [];
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    t.platform.context.events.on('platform.event', (e) => {
      if (e.type === 'system.restart') announced.push(e);
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const state = async () =>
    (await t.request('GET', '/api/v1/admin/system/restart', { token: admin })).data.data;

  it('restarts every service in-process after announcing it, losing no request', async () => {
    expect((await state()).status).toBe('idle');
    const { registry, tasks } = t.platform.context;
    // A task that takes 300 ms to stop keeps the task runner down that long during the restart.
    tasks.registerType('test_slow_stop', async (task) => {
      await new Promise<void>((resolve) =>
        task.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await new Promise((r) => setTimeout(r, 300));
      task.signal.throwIfAborted();
      return {};
    });
    const slow = await tasks.start('test_slow_stop', {});
    const res = await t.request('POST', '/api/v1/admin/system/restart', {
      token: admin,
      body: { reason: 'apply settings', delay_seconds: 0, notify_users: true },
    });
    expect(res.statusCode).toBe(202);
    expect(res.data.data).toMatchObject({
      status: 'scheduled',
      reason: 'apply settings',
      delay_seconds: 0,
      notify_users: true,
      requested_by: 'admin',
      services: registry.startOrder(),
    });
    expect(announced).toHaveLength(1);
    expect(announced[0]).toMatchObject({
      source: 'system',
      data: { reason: 'apply settings', delay_seconds: 0, requested_by: 'admin' },
    });

    // Reads, and task starts that would answer 503 if they reached the task runner while it is down.
    const urls = ['/api/v1/tasks', '/api/v1/services', '/api/v1/components/health', '/api/v1/auth/me'];
    const requests = Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0
        ? t.request('POST', '/api/v1/components/diagnostics', {
            token: admin,
            body: { components: ['memory'], background: true },
          })
        : t.request('GET', urls[i % urls.length]!, { token: admin }),
    );
    const responses = await Promise.all(requests);
    expect(responses.map((r) => r.statusCode).filter((s) => s !== 200 && s !== 202)).toEqual([]);

    expect(await eventually(async () => (await state()).status === 'completed', 10_000)).toBe(true);
    const done = await state();
    expect(done.duration_ms).toBeGreaterThan(0);
    expect(Date.parse(done.completed_at)).toBeGreaterThanOrEqual(Date.parse(done.started_at));
    for (const name of registry.names()) expect(registry.state(name)).toBe('running');
    expect(done.duration_ms).toBeGreaterThanOrEqual(300);
    // Tasks running at the restart are interrupted like at any stop.
    expect((await tasks.get(slow.id))?.error).toBe('interrupted');
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'system.restart')
      .execute();
    expect(audit).toHaveLength(1);
  });

  it('refuses a second restart while one is planned, and drops the plan when the platform closes', async () => {
    const first = await t.request('POST', '/api/v1/admin/system/restart', {
      token: admin,
      body: { reason: 'later', delay_seconds: 600, notify_users: false },
    });
    expect(first.statusCode).toBe(202);
    expect(announced).toHaveLength(1);
    const second = await t.request('POST', '/api/v1/admin/system/restart', {
      token: admin,
      body: { reason: 'again' },
    });
    expect(second.statusCode).toBe(409);
    expect(second.data.error).toMatchObject({ code: 'RESOURCE_CONFLICT', details: { status: 'scheduled' } });
  });

  it('validates the body and keeps restarts to admins', async () => {
    const bad = await t.request('POST', '/api/v1/admin/system/restart', {
      token: admin,
      body: { delay_seconds: -1 },
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.data.error.code).toBe('VALIDATION_ERROR');
    const user = await t.createUser('restart-user', ['user']);
    const denied = await t.request('POST', '/api/v1/admin/system/restart', {
      token: user.access,
      body: { reason: 'x' },
    });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('ADMIN_REQUIRED');
  });
});
