import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('tasks API', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  const announced: PlatformEventMap['platform.event'][] = [];
  const aborted = new Set<string>();

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    const { tasks, events } = t.platform.context;
    events.on('platform.event', (e) => {
      if (e.type.startsWith('task.')) announced.push(e);
    });
    tasks.registerType(
      'test_steps',
      async (task) => {
        task.step('prepare', 'running');
        task.log('info', 'preparing');
        task.step('prepare', 'completed');
        task.progress(0.5, 'apply');
        task.setDetails({ applied: Number(task.details['items']) });
        task.step('apply', 'completed');
        task.log('warning', 'applied with care');
        return { applied: task.details['items'] };
      },
      { steps: ['prepare', 'apply'] },
    );
    tasks.registerType('test_wait', async (task) => {
      task.progress(0.25);
      await new Promise<void>((resolve) => {
        task.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      aborted.add(task.taskId);
      task.signal.throwIfAborted();
      return {};
    });
    tasks.registerType('test_throw', async (task) => {
      task.log('info', 'about to fail');
      throw new Error('disk quota exceeded');
    });
    tasks.registerType('test_throw_nasty', async (task) => {
      task.log('info', 'NUL \u0000 and a lone \ud800 here');
      throw new Error(`bad \u0000 input ${'q'.repeat(100_000)}`);
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const getTask = async (id: string) =>
    (await t.request('GET', `/api/v1/tasks/${id}`, { token: admin })).data.data;

  it('runs a task to completion with its steps, progress, result and logs', async () => {
    const started = await t.platform.context.tasks.start(
      'test_steps',
      { items: 3 },
      { actor: { id: 'x', username: 'tester' } },
    );
    expect(started).toMatchObject({
      type: 'test_steps',
      status: 'running',
      progress: 0,
      created_by: 'tester',
    });
    expect(started.id).toMatch(/^task_/);
    expect(started.details.steps).toEqual([
      { name: 'prepare', status: 'pending', progress: 0 },
      { name: 'apply', status: 'pending', progress: 0 },
    ]);
    expect(await eventually(async () => (await getTask(started.id)).status === 'completed')).toBe(true);
    const task = await getTask(started.id);
    expect(task).toMatchObject({
      status: 'completed',
      progress: 1,
      result: { applied: 3 },
      error: null,
      estimated_completion: null,
      attempts: 1,
      details: {
        items: 3,
        applied: 3,
        steps: [
          { name: 'prepare', status: 'completed', progress: 1 },
          { name: 'apply', status: 'completed', progress: 1 },
        ],
      },
    });
    expect(Date.parse(task.completed_at)).toBeGreaterThanOrEqual(Date.parse(task.started_at));
    const messages = task.logs.map((l: { level: string; message: string }) => `${l.level} ${l.message}`);
    expect(messages[0]).toBe('INFO started by tester');
    expect(messages).toContain('INFO preparing');
    expect(messages).toContain('WARNING applied with care');
    expect(messages.at(-1)).toMatch(/^INFO completed in \d+ ms$/);
    // The event follows the final status once its commit is on disk (synced off the server's thread).
    expect(
      await eventually(async () =>
        announced.some(
          (e) => e.type === 'task.completed' && e.data['task_id'] === started.id && e.source === 'system',
        ),
      ),
    ).toBe(true);
  });

  it('cancels a running task: the row says cancelled at once and the handler sees its signal', async () => {
    const started = await t.platform.context.tasks.start('test_wait', {});
    expect(await eventually(async () => (await getTask(started.id)).progress === 0.25)).toBe(true);
    const running = await getTask(started.id);
    expect(running.status).toBe('running');
    expect(running.estimated_completion).not.toBeNull();

    const res = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.data.data).toEqual({ id: started.id, status: 'cancelled', cancelled_at: expect.any(String) });
    expect(await eventually(async () => aborted.has(started.id))).toBe(true);
    const task = await getTask(started.id);
    expect(task).toMatchObject({
      status: 'cancelled',
      cancelled_at: res.data.data.cancelled_at,
      completed_at: null,
    });
    expect(task.logs.some((l: { message: string }) => l.message === 'cancelled by admin')).toBe(true);

    const again = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: admin });
    expect(again.statusCode).toBe(409);
    expect(again.data.error).toMatchObject({ code: 'RESOURCE_CONFLICT', details: { status: 'cancelled' } });
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'task.cancel')
      .where('resource_id', '=', started.id)
      .execute();
    expect(audit).toHaveLength(1);
  });

  it('fails a task whose handler throws, keeping the error and announcing task.failed', async () => {
    const started = await t.platform.context.tasks.start('test_throw', {});
    expect(await eventually(async () => (await getTask(started.id)).status === 'failed')).toBe(true);
    const task = await getTask(started.id);
    expect(task).toMatchObject({ status: 'failed', error: 'disk quota exceeded', result: null });
    expect(task.logs.at(-1)).toMatchObject({ level: 'ERROR', message: 'failed: disk quota exceeded' });
    expect(
      await eventually(async () =>
        announced.some(
          (e) =>
            e.type === 'task.failed' &&
            e.data['task_id'] === started.id &&
            e.data['error'] === 'disk quota exceeded',
        ),
      ),
    ).toBe(true);
    const res = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: admin });
    expect(res.statusCode).toBe(409);
  });

  it('fails a task whose error and log lines hold NUL, a lone surrogate or 100,000 characters, with them stored', async () => {
    const started = await t.platform.context.tasks.start('test_throw_nasty', {});
    expect(await eventually(async () => (await getTask(started.id)).status === 'failed')).toBe(true);
    const task = await getTask(started.id);
    expect(task.error.startsWith(`bad \ufffd input ${'q'.repeat(100)}`)).toBe(true);
    expect(task.error.length).toBeLessThan(2_100);
    expect(task.logs.map((l: { message: string }) => l.message)).toContain(
      'NUL \ufffd and a lone \ufffd here',
    );
  });

  it('answers 404 for an unknown task', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await t.request(method, '/api/v1/tasks/task_unknown', { token: admin });
      expect(res.statusCode).toBe(404);
      expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
    }
  });

  it('lists tasks newest first, filtered by status and type, with pagination', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await t.platform.context.tasks.start('test_steps', { items: i })).id);
    for (const id of ids) await t.platform.context.tasks.settled(id);

    const page1 = await t.request('GET', '/api/v1/tasks?type=test_steps&status=completed&per_page=2', {
      token: admin,
    });
    expect(page1.statusCode).toBe(200);
    const total = page1.data.data.pagination.total;
    expect(total).toBeGreaterThanOrEqual(4);
    expect(page1.data.data.pagination).toEqual({
      page: 1,
      per_page: 2,
      total,
      pages: Math.ceil(total / 2),
      has_next: true,
      has_prev: false,
    });
    const listed = page1.data.data.tasks as { id: string; created_at: string }[];
    expect(listed.every((x) => ids.includes(x.id))).toBe(true);
    expect(listed[0]!.created_at >= listed[1]!.created_at).toBe(true);
    expect(page1.data.data.tasks[0].logs).toBeUndefined();
    for (const task of page1.data.data.tasks)
      expect(task).toMatchObject({ type: 'test_steps', status: 'completed' });

    const failed = await t.request('GET', '/api/v1/tasks?status=failed', { token: admin });
    expect(failed.data.data.tasks.every((x: { status: string }) => x.status === 'failed')).toBe(true);
    expect(failed.data.data.tasks.length).toBeGreaterThanOrEqual(1);

    const bad = await t.request('GET', '/api/v1/tasks?status=exploded&per_page=101', { token: admin });
    expect(bad.statusCode).toBe(422);
    expect(bad.data.error.code).toBe('VALIDATION_ERROR');
  });

  it('lets read:system list tasks and keeps cancelling to admin:system', async () => {
    const user = await t.createUser('task-reader', ['user']);
    const list = await t.request('GET', '/api/v1/tasks', { token: user.access });
    expect(list.statusCode).toBe(200);
    const started = await t.platform.context.tasks.start('test_wait', {});
    const denied = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('AUTHORIZATION_DENIED');
    expect((await t.request('GET', '/api/v1/tasks')).statusCode).toBe(401);
    await t.platform.context.tasks.cancel(started.id);
  });
});
