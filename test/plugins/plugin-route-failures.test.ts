import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

/**
 * A failed request of a plugin route counts as exactly one failure, whatever made it fail: a call outside
 * the manifest's permissions, a throw, or data that cannot be sent as JSON.
 */
describe('plugin route failures are counted once each', () => {
  let t: TestPlatform;
  let token: string;

  const detail = async (name: string) =>
    (await t.request('GET', `/api/v1/admin/plugins/${name}`, { token })).data.data.plugin;
  const install = async (name: string) => {
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: name },
    });
    expect(res.statusCode, res.body).toBe(201);
  };

  beforeAll(async () => {
    const repo = tempRepository();
    for (const isolation of ['inline', 'worker'] as const) {
      writePlugin(
        repo,
        { name: `nosy-${isolation}`, isolation, permissions: ['http:routes'] },
        `export default { setup(ctx) { ctx.routes.get('/peek', async () => ({ v: await ctx.cache.get('x') })); } };`,
      );
    }
    writePlugin(
      repo,
      { name: 'unsendable', permissions: ['http:routes'] },
      `export default { setup(ctx) {
        ctx.routes.get('/circular', () => { const a = { name: 'a' }; a.self = a; return a; });
        ctx.routes.get('/bigint', () => ({ n: 10n }));
        ctx.routes.get('/boom', () => { throw new Error('kaboom'); });
        ctx.routes.get('/fine', () => ({ fine: true }));
      } };`,
    );
    t = await startPlatform({ plugins: { repositories: [repo], max_failures: 5 } });
    token = await t.adminToken();
  });
  afterAll(async () => t?.close());

  for (const isolation of ['inline', 'worker'] as const) {
    it(`counts a request refused a capability once (${isolation}), so plugins.max_failures requests disable it`, async () => {
      const name = `nosy-${isolation}`;
      await install(name);
      for (let i = 1; i <= 4; i++) {
        const res = await t.request('GET', `/api/v1/ext/${name}/peek`, { token });
        expect(res.statusCode).toBe(500);
        expect(res.data.error).toMatchObject({ code: 'INTERNAL_ERROR', details: { plugin_id: name } });
      }
      const d = await detail(name);
      expect(d.metrics.errors).toBe(4);
      expect(d).toMatchObject({ status: 'active', enabled: true });
      await t.request('GET', `/api/v1/ext/${name}/peek`, { token });
      // Putting it in error follows the failure that reached the limit, not within that request.
      expect(await eventually(async () => (await detail(name)).status === 'error')).toBe(true);
      expect((await detail(name)).error).toMatch(/5 failures/);
    });
  }

  it('answers data that cannot be sent as JSON as the plugin’s failure, counted once', async () => {
    await install('unsendable');
    const thrown = await t.request('GET', '/api/v1/ext/unsendable/boom', { token });
    for (const path of ['circular', 'bigint']) {
      const res = await t.request('GET', `/api/v1/ext/unsendable/${path}`, { token });
      expect(res.statusCode, res.body).toBe(500);
      // The same answer as a route that throws: attributed to the plugin.
      expect(res.data.error.code).toBe(thrown.data.error.code);
      expect(res.data.error.details).toEqual({ plugin_id: 'unsendable' });
      expect(res.data.error.message).toMatch(/plugin 'unsendable'/);
    }
    const d = await detail('unsendable');
    expect(d.metrics.errors).toBe(3);
    expect(d).toMatchObject({ status: 'active', health: 'degraded' });
    expect(
      d.logs.some(
        (l: { level: string; message: string }) =>
          l.level === 'ERROR' && /cannot be sent as JSON/.test(l.message),
      ),
    ).toBe(true);
    expect((await t.request('GET', '/api/v1/ext/unsendable/fine', { token })).statusCode).toBe(200);
  });
});
