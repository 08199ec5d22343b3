import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/backends.js';
import { untilListening } from '../helpers/cluster-sync.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

const CODE = `export default { setup(ctx) { ctx.routes.get('/ping', () => ({ pong: ctx.plugin.version })); } };`;

describe('plugins on several instances sharing storage', () => {
  let a: TestPlatform;
  let b: TestPlatform | undefined;
  let repo: string;
  let token: string;

  beforeAll(async () => {
    repo = tempRepository();
    writePlugin(repo, { name: 'shared', permissions: ['http:routes'] }, CODE);
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
