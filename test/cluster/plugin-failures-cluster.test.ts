import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilListening } from '../helpers/cluster-sync.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';

const CODE = `export default { setup(ctx) {
  ctx.routes.get('/fine', () => ({ fine: true }));
  ctx.routes.get('/boom', () => { throw new Error('kaboom'); });
} };`;

describe('plugins.max_failures on two instances', () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let tokenA: string;
  let tokenB: string;

  const status = async (on: TestPlatform, token: string) =>
    (await on.request('GET', '/api/v1/admin/plugins/brittle', { token })).data.data.plugin.status;
  const boom = async (on: TestPlatform, token: string) => {
    const res = await on.request('GET', '/api/v1/ext/brittle/boom', { token });
    expect(res.statusCode).toBe(500);
  };

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(repo, { name: 'brittle', permissions: ['http:routes'] }, CODE);
    const config = { plugins: { repositories: [repo], max_failures: 5 } };
    a = await startPlatform(config);
    b = await startPlatform(config, { storage: a.storage });
    tokenA = await a.adminToken();
    tokenB = await b.adminToken();
    await untilListening(a, b);
    await untilListening(b, a);
    const res = await a.request('POST', '/api/v1/admin/plugins/install', {
      token: tokenA,
      body: { plugin_name: 'brittle' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const served = async () =>
      (await b.request('GET', '/api/v1/ext/brittle/fine', { token: tokenB })).statusCode === 200;
    expect(await eventually(served, 10_000)).toBe(true);
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('puts the plugin in error everywhere after max_failures failures counted on both instances together', async () => {
    // Three failures on one instance and one on the other: four in all, still under the limit.
    for (const [on, token] of [
      [a, tokenA],
      [b, tokenB],
      [a, tokenA],
      [a, tokenA],
    ] as const) {
      await boom(on, token);
    }
    // Each failure is counted a moment after its request: give them that moment before the check.
    await new Promise((r) => setTimeout(r, 300));
    expect(await status(a, tokenA)).toBe('active');
    // The fifth, on the instance that has seen only one: per-instance counting would let it through.
    await boom(b, tokenB);
    expect(await eventually(async () => (await status(a, tokenA)) === 'error', 10_000)).toBe(true);
    const detail = (await b.request('GET', '/api/v1/admin/plugins/brittle', { token: tokenB })).data.data
      .plugin;
    expect(detail).toMatchObject({ status: 'error', enabled: false });
    expect(detail.error).toMatch(/disabled after 5 failures/);
    const gone = async (on: TestPlatform, token: string) =>
      (await on.request('GET', '/api/v1/ext/brittle/fine', { token })).statusCode === 404;
    expect(await eventually(async () => (await gone(a, tokenA)) && (await gone(b, tokenB)), 10_000)).toBe(
      true,
    );
  });

  it('starts the count again when the plugin is enabled again', async () => {
    const enabled = await b.request('POST', '/api/v1/admin/plugins/brittle/enable', { token: tokenB });
    expect(enabled.data.data.plugin).toMatchObject({ status: 'active' });
    expect(
      await eventually(
        async () =>
          (await a.request('GET', '/api/v1/ext/brittle/fine', { token: tokenA })).statusCode === 200,
        10_000,
      ),
    ).toBe(true);
    await boom(a, tokenA);
    await boom(b, tokenB);
    await new Promise((r) => setTimeout(r, 300));
    expect(await status(a, tokenA)).toBe('active');
  });
});
