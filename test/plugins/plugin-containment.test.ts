import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

describe('containment: failing plugins are recorded, degraded, then put in error while the platform serves', () => {
  let t: TestPlatform;
  let token: string;

  const install = async (name: string) => {
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: name },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.data.data.plugin;
  };
  const detail = async (name: string) =>
    (await t.request('GET', `/api/v1/admin/plugins/${name}`, { token })).data.data.plugin;

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      { name: 'fragile', permissions: ['http:routes'] },
      `export default { setup(ctx) {
        ctx.routes.get('/fine', () => ({ fine: true }));
        ctx.routes.get('/boom', () => { throw new Error('kaboom'); });
      } };`,
    );
    writePlugin(
      repo,
      { name: 'broken-setup' },
      `export default { setup() { throw new Error('cannot start'); } };`,
    );
    writePlugin(
      repo,
      { name: 'nosy', permissions: ['http:routes'] },
      `export default { setup(ctx) { ctx.routes.get('/peek', async () => ({ v: await ctx.cache.get('x') })); } };`,
    );
    writePlugin(
      repo,
      { name: 'listener', permissions: ['events:subscribe'] },
      `export default { async setup(ctx) {
        await ctx.events.subscribe('sensor.*', (event) => { if (event.data.bad) throw new Error('bad reading'); });
      } };`,
    );
    writePlugin(
      repo,
      { name: 'threaded', isolation: 'worker', permissions: ['http:routes', 'storage:use'] },
      `const kept = [];
      export default { setup(ctx) {
        ctx.routes.get('/where', () => ({ pid: process.pid }));
        ctx.routes.post('/grow', () => { for (let i = 0; i < 20; i++) kept.push(new Array(50000).fill(i)); return { arrays: kept.length }; });
        ctx.routes.post('/save', async (req) => { await ctx.storage.set('k', req.body); return { saved: await ctx.storage.get('k') }; });
        ctx.routes.get('/spin', () => { for (;;) {} });
      } };`,
    );
    writePlugin(
      repo,
      { name: 'hog', isolation: 'worker', permissions: ['http:routes'] },
      `const eaten = [];
      export default { setup(ctx) {
        // Large steps reach the limit in a few allocations, well before the call timeout even on a busy machine.
        ctx.routes.post('/eat', () => { for (;;) eaten.push(new Array(1000000).fill(eaten.length)); });
      } };`,
    );
    t = await startPlatform({
      plugins: { repositories: [repo], max_failures: 3, call_timeout_ms: 1500 },
      webhooks: { retry_delay_scale: 0.001, poll_interval_ms: 50 },
    });
    token = await t.adminToken();
  });
  afterAll(async () => t?.close());

  it('answers a throwing route with 500 INTERNAL_ERROR, counts it, and degrades the plugin', async () => {
    await install('fragile');
    const res = await t.request('GET', '/api/v1/ext/fragile/boom', { token });
    expect(res.statusCode).toBe(500);
    expect(res.data.error.code).toBe('INTERNAL_ERROR');
    expect(res.body).not.toContain('kaboom');
    const d = await detail('fragile');
    expect(d).toMatchObject({ status: 'active', health: 'degraded' });
    expect(d.metrics.errors).toBe(1);
    expect(
      d.logs.some(
        (l: { level: string; message: string }) => l.level === 'ERROR' && l.message.includes('kaboom'),
      ),
    ).toBe(true);
    expect((await t.request('GET', '/api/v1/ext/fragile/fine', { token })).statusCode).toBe(200);
  });

  it('puts the plugin in error after plugins.max_failures failures; its routes answer 404 and the platform serves', async () => {
    await t.request('GET', '/api/v1/ext/fragile/boom', { token });
    await t.request('GET', '/api/v1/ext/fragile/boom', { token });
    // Putting it in error follows the failure that crossed the limit at once, but not within that request.
    expect(await eventually(async () => (await detail('fragile')).status === 'error')).toBe(true);
    const d = await detail('fragile');
    expect(d).toMatchObject({ status: 'error', enabled: false });
    expect(d.error).toMatch(/3 failures/);
    expect(d.metrics.errors).toBe(3);
    const gone = await t.request('GET', '/api/v1/ext/fragile/fine', { token });
    expect(gone.statusCode).toBe(404);
    expect((await t.request('GET', '/api/v1/health')).statusCode).toBe(200);
    const announced = async () => {
      const events = await t.request('GET', '/api/v1/events?event_type=plugin.error', { token });
      return events.data.data.events.some((e: { source: string }) => e.source === 'plugin:fragile');
    };
    expect(await eventually(announced)).toBe(true);
    // An administrator can try again: enabling resets the count.
    const again = await t.request('POST', '/api/v1/admin/plugins/fragile/enable', { token });
    expect(again.data.data.plugin).toMatchObject({ status: 'active', health: 'healthy' });
  });

  it('records a plugin whose setup throws in status error, without failing the request that enabled it', async () => {
    const plugin = await install('broken-setup');
    expect(plugin).toMatchObject({ status: 'error', enabled: false });
    expect(plugin.error).toMatch(/cannot start/);
    expect((await t.request('GET', '/api/v1/status', { token })).statusCode).toBe(200);
  });

  it('throws on a call outside the manifest permissions and logs it as a plugin error', async () => {
    await install('nosy');
    const res = await t.request('GET', '/api/v1/ext/nosy/peek', { token });
    expect(res.statusCode).toBe(500);
    const d = await detail('nosy');
    expect(d.metrics.errors).toBeGreaterThanOrEqual(1);
    expect(
      d.logs.some((l: { message: string }) => l.message.includes("needs the permission 'cache:use'")),
    ).toBe(true);
  });

  it('counts a throwing event handler as a failure and retries the delivery', async () => {
    await install('listener');
    await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'sensor.read', data: { bad: true } },
    });
    expect(await eventually(async () => (await detail('listener')).metrics.errors >= 1, 10_000)).toBe(true);
    const d = await detail('listener');
    expect(d.health).toBe('degraded');
    expect(d.logs.some((l: { message: string }) => l.message.includes('bad reading'))).toBe(true);
  });

  it('runs an isolation: worker plugin in its own process behind the same ctx, and measures its heap', async () => {
    const plugin = await install('threaded');
    expect(plugin, JSON.stringify(plugin)).toMatchObject({ status: 'active', isolation: 'worker' });
    const where = await t.request('GET', '/api/v1/ext/threaded/where', { token });
    expect(where.data.data.pid).toEqual(expect.any(Number));
    expect(where.data.data.pid).not.toBe(process.pid);
    const saved = await t.request('POST', '/api/v1/ext/threaded/save', { token, body: { a: 1 } });
    expect(saved.data.data).toEqual({ saved: { a: 1 } });
    const before = (await detail('threaded')).metrics.memory_usage_mb;
    expect(before).toBeGreaterThan(0);
    await t.request('POST', '/api/v1/ext/threaded/grow', { token });
    expect((await detail('threaded')).metrics.memory_usage_mb).toBeGreaterThan(before);
  });

  it('stops a worker plugin stuck in an endless loop and marks it error; the platform keeps serving', async () => {
    const started = Date.now();
    const res = await t.request('GET', '/api/v1/ext/threaded/spin', { token });
    expect(res.statusCode).toBe(500);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await eventually(async () => (await detail('threaded')).status === 'error')).toBe(true);
    const d = await detail('threaded');
    expect(d.error).toMatch(/terminated/);
    expect((await t.request('GET', '/api/v1/ext/threaded/where', { token })).statusCode).toBe(404);
    expect((await t.request('GET', '/api/v1/health')).statusCode).toBe(200);
    expect((await t.request('GET', '/api/v1/ext/fragile/fine', { token })).statusCode).toBe(200);
  });

  it('stops a worker plugin that exceeds plugins.worker_memory_mb and marks it error', async () => {
    const limited = await t.request('PATCH', '/api/v1/config', {
      token,
      body: { plugins: { worker_memory_mb: 16 } },
    });
    expect(limited.statusCode, limited.body).toBe(200);
    await install('hog');
    const res = await t.request('POST', '/api/v1/ext/hog/eat', { token });
    expect(res.statusCode).toBe(500);
    expect(await eventually(async () => (await detail('hog')).status === 'error')).toBe(true);
    expect((await detail('hog')).error).toMatch(/memory limit \(16 MiB\)/);
    expect((await t.request('GET', '/api/v1/health')).statusCode).toBe(200);
  });
});
