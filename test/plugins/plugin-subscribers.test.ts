import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { emit, getEvent, until } from '../webhooks/webhook-fixtures.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

/** A subscriber written as the plugin docs show: `ctx.events.subscribe` with a name, `ctx.events.emit`. */
const SUBSCRIBER = `
const seen = [];
export default {
  async setup(ctx) {
    await ctx.events.subscribe(['feed.**'], async (event, delivery) => {
      seen.push({ type: event.event_type, priority: event.priority, sequence: event.sequence, attempt: delivery.attempt });
      if (event.data.fail && delivery.attempt <= event.data.fail) throw new Error('not yet');
      if (event.data.hold) await new Promise((r) => setTimeout(r, event.data.hold));
    }, { name: 'feed' });
    ctx.routes.get('/seen', () => seen);
    ctx.routes.post('/emit', async (req) => {
      try {
        return await ctx.events.emit(req.body.type, req.body.data ?? {}, { priority: req.body.priority });
      } catch (err) {
        return { refused: err.message };
      }
    });
  },
};`;

/** Subscribes, emits an event it receives and starts a task, then goes on setting up for a while. */
const SLOW_SETUP = `
export default {
  async setup(ctx) {
    await ctx.events.subscribe('boot.*', async () => {}, { name: 'boot' });
    ctx.tasks.register('warm', async () => ({ warmed: true }));
    const { event_id } = await ctx.events.emit('boot.ready', {});
    const { task_id } = await ctx.tasks.start('warm');
    ctx.routes.get('/started', () => ({ event_id, task_id }));
    await new Promise((r) => setTimeout(r, 600));
  },
};`;

describe('plugin subscribers, through the plugin API', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  const seen = async () =>
    (await t.request('GET', '/api/v1/ext/feeder/seen', { token: admin })).data.data as {
      type: string;
      priority: number;
      sequence: number;
      attempt: number;
    }[];
  const pluginEmit = (body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/ext/feeder/emit', { token: admin, body });

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      {
        name: 'feeder',
        permissions: ['events:emit', 'events:subscribe', 'http:routes'],
        events: { emits: ['feed.**'], subscribes: ['feed.**'] },
      },
      SUBSCRIBER,
    );
    writePlugin(
      repo,
      {
        name: 'slow-setup',
        permissions: ['events:emit', 'events:subscribe', 'tasks:register', 'http:routes'],
        events: { emits: ['boot.*'], subscribes: ['boot.*'] },
      },
      SLOW_SETUP,
    );
    // Real retry delays (30 s): an attempt that fails shows as a failure rather than being retried at once.
    t = await startPlatform({
      plugins: { repositories: [repo], max_failures: 100 },
      webhooks: { poll_interval_ms: 50, max_concurrency_per_subscription: 1 },
    });
    admin = await t.adminToken();
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token: admin,
      body: { source: 'repository', plugin_name: 'feeder' },
    });
    expect(res.statusCode, res.body).toBe(201);
  });
  afterAll(async () => t?.close());

  it('refuses a plugin emit with a priority outside 1–10, as POST /api/v1/events does, storing nothing', async () => {
    for (const priority of [99, 0, 2.5, '7']) {
      const res = await pluginEmit({ type: 'feed.bad', priority });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.data.data.refused).toMatch(/priority must be an integer from 1 to 10/);
    }
    const stored = await t.request('GET', '/api/v1/events?event_type=feed.bad', { token: admin });
    expect(stored.data.data.pagination.total).toBe(0);

    const ok = await pluginEmit({ type: 'feed.good', priority: 10, data: { n: 1 } });
    expect(ok.data.data.event_id).toMatch(/^evt_/);
    await until(
      async () => (await getEvent(t, admin, ok.data.data.event_id)).status === 'processed',
      'processed',
    );
    const event = await getEvent(t, admin, ok.data.data.event_id);
    expect(event).toMatchObject({ source: 'plugin:feeder', priority: 10 });
  });

  it('delivers a backlog by priority, then sequence, and holds it while the plugin is disabled', async () => {
    const before = (await seen()).length;
    const first = await emit(t, admin, { event_type: 'feed.hold', data: { hold: 400 } });
    await until(
      async () => (await seen()).some((s) => s.type === 'feed.hold'),
      'the first delivery under way',
    );
    const ids: string[] = [];
    for (const priority of [1, 5, 10, 3, 10]) {
      ids.push(await emit(t, admin, { event_type: 'feed.order', priority }));
    }
    await until(async () => (await seen()).length === before + 6, 'the backlog');
    const order = (await seen()).slice(before + 1).map((s) => [s.priority, s.sequence]);
    const sorted = [...order].sort((a, b) => b[0]! - a[0]! || a[1]! - b[1]!);
    expect(order).toEqual(sorted);
    await until(async () => (await getEvent(t, admin, first)).status === 'processed', 'the first processed');

    // Disabled while deliveries wait: they stay queued (none is tried), and go out once it is enabled again.
    const held = await emit(t, admin, { event_type: 'feed.hold', data: { hold: 500 } });
    const waiting = await emit(t, admin, { event_type: 'feed.waiting' });
    await until(async () => (await seen()).length === before + 7, 'the held delivery under way');
    const off = await t.request('POST', '/api/v1/admin/plugins/feeder/disable', { token: admin });
    expect(off.data.data.plugin.status).toBe('disabled');
    const skipped = await emit(t, admin, { event_type: 'feed.skipped' });
    await new Promise((r) => setTimeout(r, 800));
    await until(async () => (await getEvent(t, admin, held)).status === 'processed', 'the held processed');
    const queued = await getEvent(t, admin, waiting);
    expect(queued.delivery_info).toMatchObject({ pending_deliveries: 1, delivery_attempts: [] });
    expect((await getEvent(t, admin, skipped)).delivery_info.total_subscribers).toBe(0);
    const subs = await t.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', {
      token: admin,
    });
    expect(subs.data.data.subscriptions[0]).toMatchObject({ name: 'feed', status: 'paused' });

    const on = await t.request('POST', '/api/v1/admin/plugins/feeder/enable', { token: admin });
    expect(on.data.data.plugin.status).toBe('active');
    await until(
      async () => (await getEvent(t, admin, waiting)).status === 'processed',
      'the waiting delivery',
    );
    const attempts = (await getEvent(t, admin, waiting)).delivery_info.delivery_attempts;
    expect(attempts.map((a: { status: string }) => a.status)).toEqual(['delivered']);
  });

  it('records a throwing handler as failed attempts in delivery_info and the audit trail, then delivers', async () => {
    const id = await emit(t, admin, { event_type: 'feed.flaky', data: { fail: 1 } });
    await until(
      async () => (await getEvent(t, admin, id)).delivery_info.delivery_attempts.length === 1,
      'one attempt',
    );
    const [attempt] = (await getEvent(t, admin, id)).delivery_info.delivery_attempts;
    expect(attempt).toMatchObject({ status: 'failed', error: expect.stringContaining('not yet') });
    const trail = (await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin })).data.data
      .audit_trail;
    expect(trail.at(-1)).toMatchObject({ action: 'delivery_retried', actor: 'plugin:feeder' });
    const subs = await t.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', {
      token: admin,
    });
    expect(subs.data.data.subscriptions[0].last_error).toContain('not yet');
  });

  it("refuses webhook settings on a plugin's subscription, and the webhook API does not know it", async () => {
    const subs = await t.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', {
      token: admin,
    });
    const sub = subs.data.data.subscriptions.find((s: { name: string }) => s.name === 'feed');
    for (const body of [
      { webhook_config: { url: 'https://hooks.example.test/x' } },
      { batch_config: { enabled: true, max_batch_size: 10, max_wait_time_seconds: 1 } },
    ]) {
      const res = await t.request('PATCH', `/api/v1/events/subscriptions/${sub.subscription_id}`, {
        token: admin,
        body,
      });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.data.error.details.field).toBe(Object.keys(body)[0]);
    }
    const gone = await t.request('DELETE', `/api/v1/webhooks/${sub.subscription_id}`, { token: admin });
    expect(gone.statusCode).toBe(404);
    expect(gone.data.error.code).toBe('SUBSCRIPTION_NOT_FOUND');
    const read = await t.request('GET', `/api/v1/events/subscriptions/${sub.subscription_id}`, {
      token: admin,
    });
    expect(read.data.data.subscription).toMatchObject({ delivery_method: 'plugin', webhook_url: null });
  });

  it('lets a delivery or a task that reaches a plugin still in setup wait for it, instead of failing', async () => {
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token: admin,
      body: { source: 'repository', plugin_name: 'slow-setup' },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin.status).toBe('active');
    const started = (await t.request('GET', '/api/v1/ext/slow-setup/started', { token: admin })).data
      .data as {
      event_id: string;
      task_id: string;
    };
    await until(async () => (await getEvent(t, admin, started.event_id)).status !== 'processing', 'settled');
    const event = await getEvent(t, admin, started.event_id);
    expect(event.status).toBe('processed');
    expect(event.delivery_info.delivery_attempts.map((a: { status: string }) => a.status)).toEqual([
      'delivered',
    ]);
    await until(
      async () =>
        ['completed', 'failed'].includes(
          (await t.request('GET', `/api/v1/tasks/${started.task_id}`, { token: admin })).data.data.status,
        ),
      'the task',
    );
    const task = (await t.request('GET', `/api/v1/tasks/${started.task_id}`, { token: admin })).data.data;
    expect(task).toMatchObject({ status: 'completed', result: { warmed: true } });
  });
});
