import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('concurrent system restarts', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('refuses a restart asked for while another runs, though the request waited for it at the door', async () => {
    const { registry, tasks } = t.platform.context;
    // A task that takes 300 ms to stop keeps the restart under way that long.
    tasks.registerType('test_slow_stop_concurrent', async (task) => {
      await new Promise<void>((resolve) =>
        task.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await new Promise((r) => setTimeout(r, 300));
      return {};
    });
    await tasks.start('test_slow_stop_concurrent', {});
    const restart = (reason: string) =>
      t.request('POST', '/api/v1/admin/system/restart', {
        token: admin,
        body: { reason, notify_users: false },
      });

    const first = await restart('first');
    expect(first.statusCode).toBe(202);
    expect(await eventually(async () => registry.state('task_runner') !== 'running', 5000)).toBe(true);
    // Held by the restart gate until the first restart has ended, then answered.
    const second = await restart('second');
    expect(second.statusCode).toBe(409);
    expect(second.data.error).toMatchObject({ code: 'RESOURCE_CONFLICT', details: { status: 'completed' } });

    const state = (await t.request('GET', '/api/v1/admin/system/restart', { token: admin })).data.data;
    expect(state).toMatchObject({ status: 'completed', reason: 'first' });
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'system.restart')
      .execute();
    expect(audit).toHaveLength(1);

    // A request made after the restart has ended is accepted.
    const later = await restart('later');
    expect(later.statusCode).toBe(202);
  });
});
