import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/backends.js';
import { untilListening } from '../helpers/cluster-sync.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

// Each delivery takes a while, so that with one at a time per subscription several wait in the dispatcher's lane
// while an update stops the plugin; the new version takes a while to set up before and after it subscribes, so
// the waiting deliveries come up while no version of the plugin runs, then while the new one is in setup.
const WORKER = (setupMs: number) => `export default { async setup(ctx) {
  await new Promise((r) => setTimeout(r, ${setupMs}));
  await ctx.events.subscribe(['upd.*'], async (event) => {
    ctx.logger.info('handling ' + event.event_id);
    await new Promise((r) => setTimeout(r, 500));
  }, { name: 'work' });
  await new Promise((r) => setTimeout(r, ${setupMs} / 4));
} };`;
const FLAKY = `export default { async setup(ctx) {
  await ctx.events.subscribe(['flaky.*'], () => { throw new Error('not today'); }, { name: 'flaky' });
} };`;

describe(`plugin deliveries across an update (${backend === 'cluster' ? 'two instances' : 'one instance'})`, () => {
  let a: TestPlatform;
  let b: TestPlatform | undefined;
  let token: string;

  const waitTask = async (id: string) => {
    let task: any;
    await eventually(async () => {
      task = (await a.request('GET', `/api/v1/tasks/${id}`, { token })).data.data;
      return task?.status !== 'running' && task?.status !== 'pending';
    }, 20_000);
    return task;
  };
  const deliveryInfo = async (id: string) =>
    (await a.request('GET', `/api/v1/events/${id}`, { token })).data.data.event.delivery_info;
  const emit = async (type: string) => {
    const res = await a.request('POST', '/api/v1/events', { token, body: { event_type: type } });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(repo, { name: 'upd-worker', version: '1.0.0', permissions: ['events:subscribe'] }, WORKER(0));
    writePlugin(
      repo,
      { name: 'upd-worker', version: '1.1.0', permissions: ['events:subscribe'] },
      WORKER(1200),
    );
    writePlugin(repo, { name: 'upd-flaky', permissions: ['events:subscribe'] }, FLAKY);
    const config = {
      plugins: { repositories: [repo] },
      webhooks: { max_concurrency_per_subscription: 1, poll_interval_ms: 50 },
    };
    a = await startPlatform(config);
    token = await a.adminToken();
    if (backend === 'cluster') {
      b = await startPlatform(config, { storage: a.storage });
      await untilListening(a, b);
      await untilListening(b, a);
    }
    const res = await a.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'upd-worker', version: '1.0.0' },
    });
    expect(res.statusCode, res.body).toBe(201);
    if (b) {
      const other = b;
      const otherToken = await other.adminToken();
      const loaded = async () =>
        (await other.request('GET', '/api/v1/admin/plugins/upd-worker', { token: otherToken })).data.data
          .plugin.subscriptions.length === 1;
      expect(await eventually(loaded, 10_000)).toBe(true);
    }
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('delivers events waiting during an update once the new version has set up, each in one attempt', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await emit('upd.step'));
    // The update starts while the first delivery is handled and the others wait their turn.
    const handling = async () =>
      (await a.request('GET', '/api/v1/admin/plugins/upd-worker', { token })).data.data.plugin.logs.some(
        (l: { message: string }) => l.message.startsWith('handling'),
      );
    expect(await eventually(handling, 10_000)).toBe(true);
    const started = await a.request('POST', '/api/v1/admin/plugins/upd-worker/update', {
      token,
      body: { version: '1.1.0' },
    });
    expect(started.statusCode, started.body).toBe(202);
    expect((await waitTask(started.data.data.task.id)).status).toBe('completed');
    const settled = async () => {
      for (const id of ids) if ((await deliveryInfo(id)).pending_deliveries > 0) return false;
      return true;
    };
    expect(await eventually(settled, 20_000)).toBe(true);
    for (const id of ids) {
      const info = await deliveryInfo(id);
      expect(info, id).toMatchObject({
        total_subscribers: 1,
        successful_deliveries: 1,
        failed_deliveries: 0,
      });
      expect(
        info.delivery_attempts.map((x: { status: string; error: string | null }) => [x.status, x.error]),
        id,
      ).toEqual([['delivered', null]]);
    }
  });

  it("drops a removed subscription's attempts from the event's figures with its deliveries", async () => {
    const res = await a.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'upd-flaky' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = await emit('flaky.once');
    expect(
      await eventually(async () => (await deliveryInfo(id)).delivery_attempts.length === 1, 10_000),
    ).toBe(true);
    expect(await deliveryInfo(id)).toMatchObject({ total_subscribers: 1, pending_deliveries: 1 });
    expect((await a.request('DELETE', '/api/v1/admin/plugins/upd-flaky', { token })).statusCode).toBe(200);
    expect(await deliveryInfo(id)).toMatchObject({
      total_subscribers: 0,
      successful_deliveries: 0,
      failed_deliveries: 0,
      pending_deliveries: 0,
      delivery_attempts: [],
    });
  });
});
