import { existsSync, readdirSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

/**
 * While set, writing a file of a package being unpacked (under `.staging`) fails as on a full disk. The
 * platform's modules import `writeFile` by name; `syncBuiltinESMExports` makes that binding follow the patch.
 */
const disk = { full: false };
const original = fsp.writeFile;
fsp.writeFile = (async (path: Parameters<typeof original>[0], ...rest: unknown[]) => {
  if (disk.full && String(path).includes('.staging')) {
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  }
  return (original as (...args: unknown[]) => Promise<void>)(path, ...rest);
}) as typeof fsp.writeFile;

describe('installing a plugin on a full disk', () => {
  let t: TestPlatform;
  let token: string;

  beforeAll(async () => {
    syncBuiltinESMExports();
    const repo = tempRepository();
    writePlugin(repo, { name: 'roomy' }, 'export default { setup() {} };');
    t = await startPlatform({ plugins: { repositories: [repo] } });
    token = await t.adminToken();
  });
  afterAll(async () => {
    disk.full = false;
    fsp.writeFile = original;
    syncBuiltinESMExports();
    await t?.close();
  });

  const install = () =>
    t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'roomy', config: {} },
    });

  it('answers 503 with Retry-After (the package is not invalid), installs nothing, and works once there is room', async () => {
    disk.full = true;
    const res = await install();
    disk.full = false;
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.data.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(res.data.error.message).toContain('no space left');
    expect((await t.request('GET', '/api/v1/admin/plugins/roomy', { token })).statusCode).toBe(404);
    const root = resolve(t.platform.context.cfg().storage.data_dir, 'plugins');
    expect(existsSync(join(root, 'roomy'))).toBe(false);
    expect(existsSync(join(root, '.staging')) ? readdirSync(join(root, '.staging')) : []).toEqual([]);

    const again = await install();
    expect(again.statusCode, again.body).toBe(201);
  });
});
