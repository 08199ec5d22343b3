import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskContext, TaskHandler } from '../../src/tasks/task-runner.js';
import { insertDeadInstanceTask } from '../helpers/dead-instance-task.js';
import { eventually } from '../helpers/eventually.js';
import { provisionStorage, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** A handler that runs until its signal aborts. */
const untilAborted = async (task: TaskContext) => {
  task.progress(0.1);
  await new Promise<void>((resolve) =>
    task.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  task.signal.throwIfAborted();
  return {};
};

/** Saves a checkpoint, then waits; run again after an interruption, it finishes from the checkpoint. */
const resumable: TaskHandler = async (task) => {
  if (task.resumed) {
    task.log('info', `resuming at item ${String(task.details['checkpoint'])}`);
    return { resumed_from: task.details['checkpoint'] };
  }
  task.setDetails({ checkpoint: 7 });
  return untilAborted(task);
};

describe('tasks across a restart, a crash and several instances', { timeout: 30_000 }, () => {
  let storage: Awaited<ReturnType<typeof provisionStorage>>;
  let b: TestPlatform;
  let token: string;
  const ids = { long: '', stuck: '', resumable: '' };
  let stopMs = 0;
  const release: (() => void)[] = [];
  const start = () =>
    startPlatform({ tasks: { lease_seconds: 1, stop_timeout_seconds: 1 } }, { storage: storage.tree });

  beforeAll(async () => {
    storage = await provisionStorage();
    const a = await start();
    const { tasks } = a.platform.context;
    tasks.registerType('test_long', untilAborted);
    tasks.registerType('test_stuck', async () => {
      await new Promise<void>((resolve) => release.push(resolve));
      return { finished: true };
    });
    tasks.registerType('test_resumable', resumable, { resumable: true });
    ids.long = (await tasks.start('test_long', { n: 1 })).id;
    ids.stuck = (await tasks.start('test_stuck', {})).id;
    ids.resumable = (await tasks.start('test_resumable', {})).id;
    await eventually(
      async () =>
        ((await tasks.get(ids.resumable))?.details as Record<string, unknown> | undefined)?.['checkpoint'] ===
        7,
    );
    const began = Date.now();
    await a.platform.close();
    stopMs = Date.now() - began;
    // The stuck handler finishes after its platform gave up on it: that must not change its task.
    for (const r of release) r();

    b = await start();
    b.platform.context.tasks.registerType('test_resumable', resumable, { resumable: true });
    token = await b.adminToken();
  }, 60_000);
  afterAll(async () => {
    await b?.platform.close();
    await storage?.cleanup();
  }, 60_000);

  const read = async (id: string, on = b) =>
    (await on.request('GET', `/api/v1/tasks/${id}`, { token })).data.data;

  it('fails a task that was running when the platform stopped with "interrupted"', async () => {
    const task = await read(ids.long);
    expect(task).toMatchObject({ status: 'failed', error: 'interrupted', details: { n: 1 } });
    expect(task.completed_at).not.toBeNull();
    expect(task.logs.at(-1)).toMatchObject({
      level: 'ERROR',
      message: 'interrupted: the platform stopped while the task ran',
    });
  });

  it('stops waiting for a handler that ignores its signal, and its late finish changes nothing', async () => {
    expect(stopMs).toBeLessThan(5_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(await read(ids.stuck)).toMatchObject({ status: 'failed', error: 'interrupted', result: null });
  });

  it('resumes a resumable task from its checkpoint on the next instance', async () => {
    expect(await eventually(async () => (await read(ids.resumable)).status === 'completed', 5_000)).toBe(
      true,
    );
    const task = await read(ids.resumable);
    expect(task).toMatchObject({ result: { resumed_from: 7 }, attempts: 2 });
    expect(task.logs.map((l: { message: string }) => l.message)).toContain('resuming at item 7');
  });

  it('fails a task left running by an instance that died, once its lease expires', async () => {
    await insertDeadInstanceTask(b, { id: 'task_crashed0000000000000000', progress: 0.4, details: '{}' });
    expect((await read('task_crashed0000000000000000')).status).toBe('running');
    expect(
      await eventually(async () => (await read('task_crashed0000000000000000')).status === 'failed', 5_000),
    ).toBe(true);
    const task = await read('task_crashed0000000000000000');
    expect(task.error).toBe('interrupted');
    expect(task.logs.at(-1).message).toBe('interrupted: instance dead-instance stopped renewing its lease');
  });

  it('shows a task started on one instance on another, which can cancel it', async () => {
    const c = await start();
    try {
      let abortedOnB = false;
      b.platform.context.tasks.registerType('test_shared', async (task) => {
        await untilAborted(task).catch(() => {
          abortedOnB = true;
        });
        return {};
      });
      const task = await b.platform.context.tasks.start('test_shared', { on: 'b' });
      expect(await read(task.id, c)).toMatchObject({ id: task.id, status: 'running', details: { on: 'b' } });
      const listed = await c.request('GET', '/api/v1/tasks?status=running', { token });
      expect(listed.data.data.tasks.map((x: { id: string }) => x.id)).toContain(task.id);

      const cancel = await c.request('DELETE', `/api/v1/tasks/${task.id}`, { token });
      expect(cancel.statusCode).toBe(200);
      expect(await eventually(async () => abortedOnB, 3_000)).toBe(true);
      expect((await read(task.id)).status).toBe('cancelled');
    } finally {
      await c.platform.close();
    }
  });
});
