import { createHash } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../cli/cli-process.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { MANIFEST, pack, rawTgz, tempRepository, upload, writePlugin } from './plugin-fixtures.js';

const dataDir = (t: TestPlatform) => (t.storage as { storage: { data_dir: string } }).storage.data_dir;

const HELLO = `export default { setup(ctx) { ctx.routes.get('/hello', () => ({ hello: ctx.plugin.version })); } };`;

describe('plugin packages: manifests, archives, sources and integrity', () => {
  let t: TestPlatform;
  let token: string;
  let repo: string;
  let index: Server;
  let indexUrl: string;
  const served = new Map<string, Buffer>();
  let indexBody: unknown = { plugins: {} };

  beforeAll(async () => {
    repo = tempRepository();
    index = createServer((req, res) => {
      if (req.url === '/index.json') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(indexBody));
        return;
      }
      const file = served.get(req.url ?? '');
      if (!file) {
        res.statusCode = 404;
        res.end();
        return;
      }
      res.end(file);
    });
    await new Promise<void>((resolve) => index.listen(0, '127.0.0.1', resolve));
    indexUrl = `http://127.0.0.1:${(index.address() as AddressInfo).port}/index.json`;
    t = await startPlatform({
      plugins: { repositories: [repo, indexUrl], max_archive_entries: 50, max_entry_bytes: 64 * 1024 },
    });
    token = await t.adminToken();
  });
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((resolve) => index.close(() => resolve()));
  });

  it('refuses an invalid manifest with 422 VALIDATION_ERROR naming the field', async () => {
    const bad = rawTgz([
      { name: 'plugin.json', body: MANIFEST('broken', { version: 'one', permissions: ['root:everything'] }) },
      { name: 'index.js', body: 'export default { setup() {} };' },
    ]);
    const res = await upload(t, token, bad);
    expect(res.statusCode).toBe(422);
    expect(res.data.error.code).toBe('VALIDATION_ERROR');
    const fields = res.data.error.details.errors.map((e: { field: string }) => e.field);
    expect(fields).toContain('manifest.version');
    expect(fields).toContain('manifest.permissions.0');
    const missing = rawTgz([{ name: 'plugin.json', body: JSON.stringify({ version: '1.0.0' }) }]);
    const res2 = await upload(t, token, missing);
    expect(res2.statusCode).toBe(422);
    expect(res2.data.error.details.errors.map((e: { field: string }) => e.field)).toEqual(
      expect.arrayContaining(['manifest.name', 'manifest.platform_version']),
    );
    // A field the schema does not know and a version that is no semver: one answer names both.
    const both = rawTgz([
      { name: 'plugin.json', body: MANIFEST('broken2', { version: 'x', extra: 1 }) },
      { name: 'index.js', body: 'export default { setup() {} };' },
    ]);
    const res3 = await upload(t, token, both);
    expect(res3.statusCode).toBe(422);
    expect(res3.data.error.details.errors.map((e: { field: string }) => e.field)).toEqual(
      expect.arrayContaining(['manifest.extra', 'manifest.version']),
    );
  });

  it('refuses archive entries that escape the package folder, links out of it and device files', async () => {
    const base = [
      { name: 'plugin.json', body: MANIFEST('evil') },
      { name: 'index.js', body: 'export default { setup() {} };' },
    ];
    const cases: [Parameters<typeof rawTgz>[0], string][] = [
      [[...base, { name: '../outside.js', body: 'x' }], 'path_escapes'],
      [[...base, { name: '/etc/evil', body: 'x' }], 'path_escapes'],
      [[...base, { name: 'lib/../../up.js', body: 'x' }], 'path_escapes'],
      [[...base, { name: 'link', type: '2', linkname: '../../../etc/passwd' }], 'link_escapes'],
      [[...base, { name: 'abs', type: '2', linkname: '/etc/passwd' }], 'link_escapes'],
      [[...base, { name: 'hard', type: '1', linkname: '/etc/passwd' }], 'link_escapes'],
      [
        [...base, { name: 'dir', type: '2', linkname: 'lib' }, { name: 'dir/x.js', body: 'x' }],
        'path_through_link',
      ],
      [[...base, { name: 'tty', type: '3' }], 'unsupported_entry'],
    ];
    for (const [entries, reason] of cases) {
      const res = await upload(t, token, rawTgz(entries));
      expect(res.statusCode, `${reason}: ${res.body}`).toBe(422);
      expect(res.data.error.code).toBe('PLUGIN_PACKAGE_INVALID');
      expect(res.data.error.details.reason).toBe(reason);
    }
    expect(existsSync(join(dataDir(t), 'plugins', 'outside.js'))).toBe(false);
    const list = await t.request('GET', '/api/v1/admin/plugins', { token });
    expect(list.data.data.plugins.find((p: { id: string }) => p.id === 'evil')).toBeUndefined();
  });

  it('accepts a link that stays inside the package', async () => {
    const res = await upload(
      t,
      token,
      rawTgz([
        { name: 'package/plugin.json', body: MANIFEST('linked', { main: 'entry.js' }) },
        { name: 'package/lib/real.js', body: 'export default { setup() {} };' },
        { name: 'package/entry.js', type: '2', linkname: 'lib/real.js' },
      ]),
    );
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin).toMatchObject({ id: 'linked', status: 'active' });
  });

  it('packs and installs a folder whose files have several hard links (as pnpm installs them)', async () => {
    const dir = writePlugin(
      tempRepository(),
      { name: 'hardlinked', main: 'entry.js', permissions: ['http:routes'] },
      '',
    );
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'lib', 'real.js'), HELLO);
    linkSync(join(dir, 'lib', 'real.js'), join(dir, 'entry.js'));
    const { archive } = await pack(dir);
    const res = await upload(t, token, archive);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin, res.body).toMatchObject({ id: 'hardlinked', status: 'active' });
    const hello = await t.request('GET', '/api/v1/ext/hardlinked/hello', { token });
    expect(hello.data.data).toEqual({ hello: '1.0.0' });
  });

  it('refuses archives over the entry-count and size limits', async () => {
    const many = [
      { name: 'plugin.json', body: MANIFEST('many') },
      { name: 'index.js', body: 'x' },
    ];
    for (let i = 0; i < 60; i++) many.push({ name: `f${i}.js`, body: '1' });
    const res = await upload(t, token, rawTgz(many));
    expect(res.data.error).toMatchObject({
      code: 'PLUGIN_PACKAGE_INVALID',
      details: { reason: 'too_many_entries' },
    });
    const big = rawTgz([
      { name: 'plugin.json', body: MANIFEST('big') },
      { name: 'index.js', body: 'x' },
      { name: 'blob.bin', body: 'a'.repeat(100 * 1024) },
    ]);
    const res2 = await upload(t, token, big);
    expect(res2.data.error).toMatchObject({
      code: 'PLUGIN_PACKAGE_INVALID',
      details: { reason: 'entry_too_large' },
    });
    const notGzip = await upload(t, token, Buffer.from('not an archive'));
    expect(notGzip.data.error).toMatchObject({
      code: 'PLUGIN_PACKAGE_INVALID',
      details: { reason: 'not_gzip' },
    });
  });

  it('installs an uploaded .tgz, checking the sha256 given with it', async () => {
    const dir = writePlugin(tempRepository(), { name: 'uploaded', permissions: ['http:routes'] }, HELLO);
    const { archive, sha256 } = await pack(dir);
    const wrong = await upload(t, token, archive, { source: 'file', sha256: '0'.repeat(64) });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.data.error.details).toMatchObject({ reason: 'sha256_mismatch', actual: sha256 });
    const res = await upload(t, token, archive, { source: 'file', sha256 });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin).toMatchObject({ id: 'uploaded', source: 'file', status: 'active' });
    const hello = await t.request('GET', '/api/v1/ext/uploaded/hello', { token });
    expect(hello.data.data).toEqual({ hello: '1.0.0' });
    const again = await upload(t, token, archive);
    expect(again.statusCode).toBe(409);
    expect(again.data.error.code).toBe('RESOURCE_CONFLICT');
    const json = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'file', plugin_name: 'uploaded' },
    });
    expect(json.statusCode).toBe(422);
  });

  it('installs from an HTTP index repository after checking the published sha256', async () => {
    const dir = writePlugin(
      tempRepository(),
      { name: 'remote', version: '2.1.0', permissions: ['http:routes'] },
      HELLO,
    );
    const { archive, sha256 } = await pack(dir);
    served.set('/remote-2.1.0.tgz', archive);
    indexBody = {
      plugins: {
        remote: {
          description: 'served over HTTP',
          versions: { '2.1.0': { url: 'remote-2.1.0.tgz', sha256 } },
        },
        tampered: {
          versions: {
            '1.0.0': { url: '/remote-2.1.0.tgz', sha256: createHash('sha256').update('x').digest('hex') },
          },
        },
      },
    };
    const available = await t.request('GET', '/api/v1/admin/plugins/available', { token });
    expect(available.data.data.plugins).toEqual(
      expect.arrayContaining([
        {
          name: 'remote',
          description: 'served over HTTP',
          versions: ['2.1.0'],
          latest: '2.1.0',
          installed_version: null,
        },
      ]),
    );
    const bad = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'tampered', version: '1.0.0' },
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.data.error.details.reason).toBe('sha256_mismatch');
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'remote', version: 'latest' },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect((await t.request('GET', '/api/v1/ext/remote/hello', { token })).data.data).toEqual({
      hello: '2.1.0',
    });
    const after = await t.request('GET', '/api/v1/admin/plugins/available', { token });
    expect(after.data.data.plugins.find((p: { name: string }) => p.name === 'remote').installed_version).toBe(
      '2.1.0',
    );
    const missing = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'remote', version: '9.9.9' },
    });
    expect(missing.statusCode).toBe(404);
  });

  it('keeps installed packages under <data_dir>/plugins/<name>/<version>/', async () => {
    expect(existsSync(join(dataDir(t), 'plugins', 'uploaded', '1.0.0', 'plugin.json'))).toBe(true);
    expect(existsSync(join(dataDir(t), 'plugins', 'remote', '2.1.0', 'index.js'))).toBe(true);
  });

  it('`platform plugin pack DIR` writes <name>-<version>.tgz and prints its sha256', async () => {
    const dir = writePlugin(tempRepository(), { name: 'packed', version: '0.3.0' }, HELLO);
    const out = tempRepository();
    const res = await runCli(['plugin', 'pack', dir, '--out', out], { cwd: out, env: cliEnv({}) });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const file = join(out, 'packed-0.3.0.tgz');
    const digest = createHash('sha256').update(readFileSync(file)).digest('hex');
    expect(res.stdout).toBe(`${digest}  ${file}\n`);
    expect(readFileSync(`${file}.sha256`, 'utf8')).toBe(`${digest}  packed-0.3.0.tgz\n`);
    expect(digest).toBe((await pack(dir)).sha256);
    // Packed into its own folder, the archive and its .sha256 are left out of the next pack.
    writeFileSync(join(dir, 'packed-0.3.0.tgz'), readFileSync(file));
    writeFileSync(join(dir, 'packed-0.3.0.tgz.sha256'), readFileSync(`${file}.sha256`));
    expect((await pack(dir)).sha256).toBe(digest);
    const invalid = await runCli(['plugin', 'pack', out], { cwd: out, env: cliEnv({}) });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/not a valid plugin/);
  });
});
