import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertDeadInstanceTask } from '../helpers/dead-instance-task.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** A task that ends without completing leaves no step running, and its progress never goes backwards. */
describe('tasks that fail, are cancelled or are interrupted end their steps', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    // A short lease, so a task its instance stopped renewing is swept within a second.
    t = await startPlatform({ tasks: { lease_seconds: 1 } });
    admin = await t.adminToken();
    const { tasks } = t.platform.context;
    tasks.registerType(
      'test_fail_midway',
      async (task) => {
        task.step('fetch', 'completed');
        task.progress(0.6, 'apply');
        task.progress(0.2);
        throw new Error('apply exploded');
      },
      { steps: ['fetch', 'apply', 'verify'] },
    );
    tasks.registerType(
      'test_wait_in_step',
      async (task) => {
        task.progress(0.4, 'work');
        await new Promise<void>((resolve) => {
          task.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        task.signal.throwIfAborted();
        return {};
      },
      { steps: ['work', 'finish'] },
    );
    tasks.registerType(
      'test_ignores_cancel',
      async (task) => {
        task.step('first', 'completed');
        task.progress(0.5, 'second');
        await new Promise<void>((resolve) => {
          task.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        // A handler that goes on after the cancel and returns normally.
        task.step('second', 'completed');
        task.progress(0.9, 'third');
        return { done: true };
      },
      { steps: ['first', 'second', 'third', 'fourth'] },
    );
    tasks.registerType(
      'test_point_of_no_return',
      async (task) => {
        task.progress(0.2, 'prepare');
        await new Promise((r) => setTimeout(r, Number(task.details['wait_ms'] ?? 0)));
        task.step('prepare', 'completed');
        await task.beginUncancellable();
        task.progress(0.5, 'commit');
        // Long enough for the test to see the commit running and ask to cancel, on a busy machine too.
        await new Promise((r) => setTimeout(r, 1500));
        task.step('commit', 'completed');
        task.step('after', 'completed');
        return { committed: true };
      },
      { steps: ['prepare', 'commit', 'after'] },
    );
  }, 60_000);
  afterAll(async () => t?.close(), 60_000);

  const getTask = async (id: string) =>
    (await t.request('GET', `/api/v1/tasks/${id}`, { token: admin })).data.data;
  const steps = (task: { details: { steps: { name: string; status: string }[] } }) =>
    Object.fromEntries(task.details.steps.map((s) => [s.name, s.status]));

  it('fails the step that was running and keeps the progress reached', async () => {
    const started = await t.platform.context.tasks.start('test_fail_midway', {});
    expect(await eventually(async () => (await getTask(started.id)).status === 'failed')).toBe(true);
    const task = await getTask(started.id);
    expect(task.error).toBe('apply exploded');
    expect(steps(task)).toEqual({ fetch: 'completed', apply: 'failed', verify: 'pending' });
    expect(task.progress).toBe(0.6);
  });

  it('cancels the step that was running when the task is cancelled', async () => {
    const started = await t.platform.context.tasks.start('test_wait_in_step', {});
    expect(await eventually(async () => (await getTask(started.id)).progress === 0.4)).toBe(true);
    const res = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: admin });
    expect(res.statusCode).toBe(200);
    expect(await eventually(async () => steps(await getTask(started.id)).work === 'cancelled', 5_000)).toBe(
      true,
    );
    const task = await getTask(started.id);
    expect(task).toMatchObject({ status: 'cancelled', progress: 0.4 });
    // Every step is final: the one that was running is cancelled, the one that never began skipped.
    expect(steps(task)).toEqual({ work: 'cancelled', finish: 'skipped' });
  });

  it('leaves every step final after a cancel, even when the handler returns normally afterwards', async () => {
    const started = await t.platform.context.tasks.start('test_ignores_cancel', {});
    expect(await eventually(async () => (await getTask(started.id)).progress === 0.5)).toBe(true);
    const res = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: admin });
    expect(res.statusCode).toBe(200);
    await t.platform.context.tasks.settled(started.id);
    const task = await getTask(started.id);
    expect(task.status).toBe('cancelled');
    expect(task.result).toBeNull();
    expect(task.cancellable).toBe(false);
    const statuses = Object.values(steps(task));
    expect(statuses).not.toContain('running');
    expect(statuses).not.toContain('pending');
    expect(steps(task)).toMatchObject({ first: 'completed', fourth: 'skipped' });
  });

  it('refuses with 409 to cancel a task past its point of no return, which then finishes every step', async () => {
    // Before its point of no return for 300 ms: cancellable, as the answer says.
    const started = await t.platform.context.tasks.start('test_point_of_no_return', { wait_ms: 300 });
    expect((await getTask(started.id)).cancellable).toBe(true);
    expect(await eventually(async () => steps(await getTask(started.id)).commit === 'running', 5_000)).toBe(
      true,
    );
    expect((await getTask(started.id)).cancellable).toBe(false);
    const res = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: admin });
    expect(res.statusCode).toBe(409);
    expect(res.data.error).toMatchObject({
      code: 'RESOURCE_CONFLICT',
      details: { id: started.id, status: 'running', reason: 'not_cancellable' },
    });
    await t.platform.context.tasks.settled(started.id);
    const task = await getTask(started.id);
    expect(task).toMatchObject({ status: 'completed', result: { committed: true } });
    expect(steps(task)).toEqual({ prepare: 'completed', commit: 'completed', after: 'completed' });
  });

  it('stops a task cancelled before its point of no return, with its later steps skipped', async () => {
    const started = await t.platform.context.tasks.start('test_point_of_no_return', { wait_ms: 500 });
    const res = await t.request('DELETE', `/api/v1/tasks/${started.id}`, { token: admin });
    expect(res.statusCode).toBe(200);
    await t.platform.context.tasks.settled(started.id);
    const task = await getTask(started.id);
    expect(task.status).toBe('cancelled');
    expect(steps(task)).toEqual({ prepare: 'completed', commit: 'skipped', after: 'skipped' });
  });

  it('fails the running step of a task interrupted by an instance that died', async () => {
    const id = 'task_deadstep000000000000000';
    await insertDeadInstanceTask(t, {
      id,
      progress: 0.5,
      details: JSON.stringify({
        steps: [
          { name: 'sessions', status: 'completed', progress: 1 },
          { name: 'tasks', status: 'running', progress: 0.5 },
        ],
      }),
    });
    expect(await eventually(async () => (await getTask(id)).status === 'failed', 5_000)).toBe(true);
    const task = await getTask(id);
    expect(task).toMatchObject({ error: 'interrupted', progress: 0.5 });
    expect(steps(task)).toEqual({ sessions: 'completed', tasks: 'failed' });
  });
});
