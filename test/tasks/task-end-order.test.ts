import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** The value of one sample line of a Prometheus text exposition, 0 when absent. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

/**
 * A client that reads a task's final status and right then its counter (GET /metrics) and its event
 * (`task.completed` / `task.failed` in GET /api/v1/events) finds both: they are recorded before the status.
 */
describe('the end of a task, as a client reads it', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let key: string;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    const created = await t.request('POST', '/api/v1/auth/api-keys', {
      token: admin,
      body: { name: 'prometheus', scopes: ['read:metrics'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    key = created.data.data.key;
    const pause = () => new Promise((resolve) => setTimeout(resolve, 10));
    t.platform.context.tasks.registerType('test_quick_ok', async () => {
      await pause();
      return { ok: true };
    });
    t.platform.context.tasks.registerType('test_quick_fail', async () => {
      await pause();
      throw new Error('failed on purpose');
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const scrape = async () => {
    const res = await t.request('GET', '/metrics', { headers: { authorization: `Bearer ${key}` } });
    expect(res.statusCode, res.body).toBe(200);
    return res.body;
  };

  for (const [type, status, eventType] of [
    ['test_quick_ok', 'completed', 'task.completed'],
    ['test_quick_fail', 'failed', 'task.failed'],
  ] as const) {
    it(`has counted and stored the end once the task reads ${status}`, async () => {
      const counter = `platform_tasks_total{type="${type}",status="${status}"}`;
      for (let n = 1; n <= 20; n++) {
        const { id } = await t.platform.context.tasks.start(type, {});
        let task: { status: string } | undefined;
        // As fast as a client can ask: no pause between reads (a turn of the event loop only, or an injected
        // request answered from SQLite never lets the timers run).
        for (;;) {
          const res = await t.request('GET', `/api/v1/tasks/${id}`, { token: admin });
          expect(res.statusCode, res.body).toBe(200);
          task = res.data.data;
          if (task!.status !== 'running') break;
          await new Promise((resolve) => setImmediate(resolve));
        }
        expect(task!.status).toBe(status);
        // Both read at once, right after the status.
        const [events, metrics] = await Promise.all([
          t.request('GET', `/api/v1/events?event_type=${eventType}&per_page=100`, { token: admin }),
          scrape(),
        ]);
        expect(sample(metrics, counter), `the counter once task ${n} reads ${status}`).toBe(n);
        expect(events.statusCode, events.body).toBe(200);
        const found = (events.data.data.events as { data_preview?: { task_id?: string } }[]).filter(
          (e) => e.data_preview?.task_id === id,
        );
        expect(found, `the ${eventType} event once task ${n} reads ${status}`).toHaveLength(1);
      }
    });
  }
});
