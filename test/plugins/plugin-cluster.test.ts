import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/backends.js';
import { untilListening } from '../helpers/cluster-sync.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

const CODE = `export default { setup(ctx) { ctx.routes.get('/ping', () => ({ pong: ctx.plugin.version })); } };`;
// Slow to start, so that changes made on two instances at once overlap; it subscribes, so its subscription's
// state shows whether the installed state and the subscription agree after them.
const RACER = `export default { async setup(ctx) {
  await new Promise((r) => setTimeout(r, 150));
  ctx.routes.get('/ping', () => ({ pong: true }));
  await ctx.events.subscribe(['race.*'], () => {}, { name: 'race' });
} };`;

describe('plugins on several instances sharing storage', () => {
  let a: TestPlatform;
  let b: TestPlatform | undefined;
  let repo: string;
  let token: string;

  beforeAll(async () => {
    repo = tempRepository();
    writePlugin(repo, { name: 'shared', permissions: ['http:routes'] }, CODE);
    writePlugin(repo, { name: 'racer', permissions: ['http:routes', 'events:subscribe'] }, RACER);
    a = await startPlatform({ plugins: { repositories: [repo] } });
    token = await a.adminToken();
    const res = await a.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'shared' },
    });
    expect(res.statusCode, res.body).toBe(201);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('loads the enabled plugins of the shared database when an instance starts, unpacking them from the database', async () => {
    // The other machine has no copy of the package: it unpacks the archive kept in the database.
    const dataDir = (a.storage as { storage: { data_dir: string } }).storage.data_dir;
    rmSync(join(dataDir, 'plugins', 'shared'), { recursive: true, force: true });
    b = await startPlatform({ plugins: { repositories: [repo] } }, { storage: a.storage });
    const res = await b.request('GET', '/api/v1/ext/shared/ping', { token: await b.adminToken() });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.data.data).toEqual({ pong: '1.0.0' });
  });

  if (backend === 'cluster') {
    it('follows a disable, an enable and an uninstall made on another instance, without a restart', async () => {
      const other = b!;
      const otherToken = await other.adminToken();
      await untilListening(a, other);
      const ping = async () =>
        (await other.request('GET', '/api/v1/ext/shared/ping', { token: otherToken })).statusCode;
      expect((await a.request('POST', '/api/v1/admin/plugins/shared/disable', { token })).statusCode).toBe(
        200,
      );
      expect(await eventually(async () => (await ping()) === 404)).toBe(true);
      const detail = await other.request('GET', '/api/v1/admin/plugins/shared', { token: otherToken });
      expect(detail.data.data.plugin).toMatchObject({ status: 'disabled', enabled: false });
      expect((await a.request('POST', '/api/v1/admin/plugins/shared/enable', { token })).statusCode).toBe(
        200,
      );
      expect(await eventually(async () => (await ping()) === 200)).toBe(true);
      expect((await a.request('DELETE', '/api/v1/admin/plugins/shared', { token })).statusCode).toBe(200);
      expect(await eventually(async () => (await ping()) === 404)).toBe(true);
      expect(
        (await other.request('GET', '/api/v1/admin/plugins', { token: otherToken })).data.data.plugins,
      ).toEqual([]);
    });

    it('runs changes of one plugin made on two instances at once one after the other, ending consistent', async () => {
      const other = b!;
      const otherToken = await other.adminToken();
      await untilListening(a, other);
      await untilListening(other, a);
      const on = (i: TestPlatform) => ({ i, token: i === a ? token : otherToken });
      const both = [on(a), on(other)];
      const install = await Promise.all(
        both.map(({ i, token: tk }) =>
          i.request('POST', '/api/v1/admin/plugins/install', { token: tk, body: { plugin_name: 'racer' } }),
        ),
      );
      expect(install.map((r) => r.statusCode).sort(), install.map((r) => r.body).join('\n')).toEqual([
        201, 409,
      ]);
      expect(install.find((r) => r.statusCode === 409)?.data.error.code).toBe('RESOURCE_CONFLICT');

      /** Once both instances settled: the row, both instances' routes and the subscription all agree. */
      const agreed = async () => {
        const row = (await a.request('GET', '/api/v1/admin/plugins/racer', { token })).data.data.plugin;
        const served = row.status === 'active' ? 200 : 404;
        const subs = await a.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', { token });
        const sub = subs.data.data.subscriptions.find((s: { event_patterns: string[] }) =>
          s.event_patterns.includes('race.*'),
        );
        const pings = await Promise.all(
          both.map(
            async ({ i, token: tk }) =>
              (await i.request('GET', '/api/v1/ext/racer/ping', { token: tk })).statusCode,
          ),
        );
        return (
          ['active', 'disabled'].includes(row.status) &&
          row.enabled === (row.status === 'active') &&
          sub?.status === (row.status === 'active' ? 'active' : 'paused') &&
          pings.every((p) => p === served)
        );
      };
      for (let round = 0; round < 4; round++) {
        const [enabler, disabler] = round % 2 === 0 ? both : [...both].reverse();
        const results = await Promise.all([
          enabler!.i.request('POST', '/api/v1/admin/plugins/racer/enable', { token: enabler!.token }),
          disabler!.i.request('POST', '/api/v1/admin/plugins/racer/disable', { token: disabler!.token }),
          enabler!.i.request('POST', '/api/v1/admin/plugins/racer/disable', { token: enabler!.token }),
          disabler!.i.request('POST', '/api/v1/admin/plugins/racer/enable', { token: disabler!.token }),
        ]);
        expect(
          results.map((r) => r.statusCode),
          results.map((r) => r.body).join('\n'),
        ).toEqual([200, 200, 200, 200]);
        expect(await eventually(agreed, 10_000), `round ${round}`).toBe(true);
      }

      const removed = await Promise.all(
        both.map(({ i, token: tk }) => i.request('DELETE', '/api/v1/admin/plugins/racer', { token: tk })),
      );
      expect(removed.map((r) => r.statusCode).sort(), removed.map((r) => r.body).join('\n')).toEqual([
        200, 404,
      ]);
      for (const { i, token: tk } of both) {
        expect(
          await eventually(
            async () => (await i.request('GET', '/api/v1/ext/racer/ping', { token: tk })).statusCode === 404,
          ),
        ).toBe(true);
      }
      const subs = await a.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', { token });
      expect(
        subs.data.data.subscriptions.filter((s: { event_patterns: string[] }) =>
          s.event_patterns.includes('race.*'),
        ),
      ).toEqual([]);
    });

    it('follows an install made on another instance', async () => {
      const other = b!;
      const otherToken = await other.adminToken();
      const res = await other.request('POST', '/api/v1/admin/plugins/install', {
        token: otherToken,
        body: { plugin_name: 'shared' },
      });
      expect(res.statusCode, res.body).toBe(201);
      expect(
        await eventually(
          async () => (await a.request('GET', '/api/v1/ext/shared/ping', { token })).statusCode === 200,
        ),
      ).toBe(true);
    });
  }
});
