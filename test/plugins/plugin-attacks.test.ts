import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { MANIFEST, rawTgz, tempRepository, upload, writePlugin } from './plugin-fixtures.js';

const dataDir = (t: TestPlatform) => (t.storage as { storage: { data_dir: string } }).storage.data_dir;

describe('plugin attacks: what a plugin or its package may not reach', () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Server;
  let base: string;
  const received: { path: string; body: string }[] = [];
  const install = async (name: string, config?: Record<string, unknown>) =>
    t.request('POST', '/api/v1/admin/plugins/install', {
      token: admin,
      body: { source: 'repository', plugin_name: name, ...(config ? { config } : {}) },
    });

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      { name: 'snoop', isolation: 'worker', permissions: ['http:routes'] },
      `import { readFileSync, writeFileSync } from 'node:fs';
      import { join } from 'node:path';
      const attempt = (read) => { try { return { ok: true, bytes: read().length }; } catch (e) { return { ok: false, code: e.code }; } };
      export default { setup(ctx) {
        ctx.routes.post('/read', (req) => attempt(() => readFileSync(req.body.path)));
        ctx.routes.post('/write', (req) => attempt(() => { writeFileSync(req.body.path, 'x'); return 'x'; }));
        ctx.routes.post('/own', () => {
          writeFileSync(join(ctx.plugin.dataDir, 'note.txt'), 'mine');
          return {
            note: readFileSync(join(ctx.plugin.dataDir, 'note.txt'), 'utf8'),
            manifest: JSON.parse(readFileSync(new URL('./plugin.json', import.meta.url), 'utf8')).name,
          };
        });
      } };`,
    );
    writePlugin(
      repo,
      { name: 'filer', permissions: ['http:routes'] },
      `export default { setup(ctx) {
        ctx.routes.post('/append', async (req) => {
          try { await ctx.files.append(req.body.path, 'line\\n'); return { ok: true, content: await ctx.files.read(req.body.path) }; }
          catch (e) { return { ok: false, error: e.message }; }
        });
      } };`,
    );
    // A local receiver standing for an internal service: only 127.0.0.1 is ever a target.
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        received.push({ path: req.url ?? '', body });
        if (req.url === '/bounce') {
          res.writeHead(307, { location: '/stolen' });
          res.end();
          return;
        }
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    t = await startPlatform({
      // The bundled first-party plugins (./plugins) and this test's own.
      plugins: { repositories: ['./plugins', repo] },
      webhooks: { allow_private_targets: false, poll_interval_ms: 50, retry_delay_scale: 0.001 },
    });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it('refuses a chain of symbolic links that leaves the package once every link is followed', async () => {
    // `d/up` alone resolves to the package root and `esc` alone reads as `d`: together, `esc` is the
    // package's parent on disk, and `root` climbs from there to `/`.
    const res = await upload(
      t,
      admin,
      rawTgz([
        { name: 'plugin.json', body: MANIFEST('chained') },
        { name: 'index.js', body: 'export default { setup() {} };' },
        { name: 'd', type: '5' },
        { name: 'd/up', type: '2', linkname: '..' },
        { name: 'esc', type: '2', linkname: 'd/up/..' },
      ]),
    );
    expect(res.statusCode, res.body).toBe(422);
    expect(res.data.error).toMatchObject({
      code: 'PLUGIN_PACKAGE_INVALID',
      details: { reason: 'link_escapes', entry: 'esc', target: 'd/up/..' },
    });
    const loop = await upload(
      t,
      admin,
      rawTgz([
        { name: 'plugin.json', body: MANIFEST('looped') },
        { name: 'index.js', body: 'export default { setup() {} };' },
        { name: 'a', type: '2', linkname: 'b' },
        { name: 'b', type: '2', linkname: 'a' },
      ]),
    );
    expect(loop.statusCode, loop.body).toBe(422);
    expect(loop.data.error.details.reason).toBe('link_escapes');
    for (const id of ['chained', 'looped']) {
      expect(existsSync(join(dataDir(t), 'plugins', id))).toBe(false);
    }
    // A chain that stays inside is still accepted.
    const fine = await upload(
      t,
      admin,
      rawTgz([
        { name: 'plugin.json', body: MANIFEST('chain-inside', { main: 'entry.js' }) },
        { name: 'lib/real.js', body: 'export default { setup() {} };' },
        { name: 'lib/up', type: '2', linkname: '..' },
        { name: 'lib/entry.js', type: '2', linkname: 'real.js' },
        { name: 'entry.js', type: '2', linkname: 'lib/entry.js' },
      ]),
    );
    expect(fine.statusCode, fine.body).toBe(201);
  });

  it("confines a worker plugin's file system to its own folders: the platform's database and data stay out of reach", async () => {
    const res = await install('snoop');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin).toMatchObject({ status: 'active', isolation: 'worker' });
    const data = dataDir(t);
    // The SQLite database (embedded) and any file of the platform's data folder (both backends).
    const planted = join(data, 'not-for-plugins.txt');
    writeFileSync(planted, 'secret');
    const targets = [planted, ...(t.backend === 'sqlite' ? [join(data, 'platform.db')] : [])];
    for (const path of targets) {
      expect(existsSync(path)).toBe(true);
      const read = await t.request('POST', '/api/v1/ext/snoop/read', { token: admin, body: { path } });
      expect(read.data.data, path).toEqual({ ok: false, code: 'ERR_ACCESS_DENIED' });
    }
    const write = await t.request('POST', '/api/v1/ext/snoop/write', {
      token: admin,
      body: { path: join(data, 'dropped.txt') },
    });
    expect(write.data.data).toEqual({ ok: false, code: 'ERR_ACCESS_DENIED' });
    expect(existsSync(join(data, 'dropped.txt'))).toBe(false);
    expect(readFileSync(planted, 'utf8')).toBe('secret');
    // Its own data folder (read and write) and its own package (read) still work.
    const own = await t.request('POST', '/api/v1/ext/snoop/own', { token: admin });
    expect(own.data.data).toEqual({ note: 'mine', manifest: 'snoop' });
  });

  it("sends notifier's posts through the guarded connector: private targets refused unless allowed, no redirects, its URL masked", {
    timeout: 60_000,
  }, async () => {
    expect((await install('audit-forwarder')).statusCode).toBe(201);
    const res = await install('notifier', { url: `${base}/hook`, patterns: ['ssrf.*'], timeout_ms: 2000 });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin.permissions).toContain('http:fetch');
    const emit = (type: string) =>
      t.request('POST', '/api/v1/events', { token: admin, body: { event_type: type, data: {} } });
    const logs = async () =>
      (
        (await t.request('GET', '/api/v1/admin/plugins/notifier', { token: admin })).data.data.plugin
          .logs as {
          message: string;
        }[]
      ).map((l) => l.message);

    // webhooks.allow_private_targets off: refused before any packet, and the error names the host and why.
    await emit('ssrf.refused');
    expect(await eventually(async () => (await logs()).some((m) => m.includes('loopback')), 10_000)).toBe(
      true,
    );
    const refusal = (await logs()).find((m) => m.includes('loopback')) ?? '';
    expect(refusal).toMatch(
      /POST 127\.0\.0\.1:\d+ failed: refused: target 127\.0\.0\.1 is a loopback address/,
    );
    expect(refusal).toContain('webhooks.allow_private_targets');
    expect(received).toHaveLength(0);

    // Allowed: the same plugin reaches the receiver.
    const on = await t.request('PATCH', '/api/v1/config', {
      token: admin,
      body: { webhooks: { allow_private_targets: true } },
    });
    expect(on.statusCode, on.body).toBe(200);
    await emit('ssrf.allowed');
    expect(await eventually(async () => received.some((r) => r.body.includes('ssrf.allowed')), 10_000)).toBe(
      true,
    );

    // A failure names the target's host and its cause, not just "fetch failed".
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = await t.request('PATCH', '/api/v1/plugins/notifier', {
      token: admin,
      body: { config: { url: `http://127.0.0.1:${closedPort}/hook` } },
    });
    expect(down.statusCode, down.body).toBe(200);
    await emit('ssrf.down');
    const unreachable = `POST 127.0.0.1:${closedPort} failed: connect ECONNREFUSED`;
    expect(await eventually(async () => (await logs()).some((m) => m.includes(unreachable)), 10_000)).toBe(
      true,
    );

    // A 307 is not followed: the POST and its body never reach the redirect's target.
    const bounce = await t.request('PATCH', '/api/v1/plugins/notifier', {
      token: admin,
      body: { config: { url: `${base}/bounce` } },
    });
    expect(bounce.statusCode, bounce.body).toBe(200);
    await emit('ssrf.redirected');
    // The 307 may be met first by a retry of the delivery that failed above (its backoff under load can pass 10 s).
    expect(await eventually(async () => (await logs()).some((m) => m.includes('answered 307')), 30_000)).toBe(
      true,
    );
    expect(received.some((r) => r.path === '/bounce')).toBe(true);
    expect(received.some((r) => r.path === '/stolen')).toBe(false);

    // Its target URL is a secret: no user reads it through the plugin resource routes.
    const user = await t.createUser('curious', ['user']);
    const seen = await t.request('GET', '/api/v1/plugins/notifier', { token: user.access });
    expect(seen.statusCode).toBe(200);
    expect(seen.data.data.plugin.configuration.url).toBe('********');
    expect(seen.body).not.toContain('/bounce');
    await t.request('DELETE', '/api/v1/admin/plugins/notifier', { token: admin });
    await t.request('DELETE', '/api/v1/admin/plugins/audit-forwarder', { token: admin });
  });

  it("keeps plugin files inside the plugin's own data folder, checked by the platform's file capability", async () => {
    // audit-forwarder refuses a path leaving its folder when configured…
    for (const path of ['/tmp/forwarded.jsonl', '../../escape.jsonl', 'logs/../../escape.jsonl']) {
      const res = await install('audit-forwarder', { path });
      expect(res.statusCode, `${path}: ${res.body}`).toBe(422);
      expect(res.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'config.path' } });
    }
    expect(existsSync('/tmp/forwarded.jsonl')).toBe(false);
    expect(existsSync(join(dataDir(t), 'escape.jsonl'))).toBe(false);
    // …and its status shows the path as configured, not the server's folders.
    expect((await install('audit-forwarder', { path: 'logs/audit.jsonl' })).statusCode).toBe(201);
    const status = await t.request('GET', '/api/v1/ext/audit-forwarder/status', { token: admin });
    expect(status.data.data.path).toBe('logs/audit.jsonl');
    expect(status.body).not.toContain(dataDir(t));
    expect(existsSync(join(dataDir(t), 'plugin-data', 'audit-forwarder', 'logs', 'audit.jsonl'))).toBe(true);

    // The platform refuses it for any plugin: absolute paths, `..` out, and links inside leading out.
    expect((await install('filer')).statusCode).toBe(201);
    const outside = mkdtempSync(join(tmpdir(), 'outside-'));
    const own = join(dataDir(t), 'plugin-data', 'filer');
    mkdirSync(own, { recursive: true });
    symlinkSync(outside, join(own, 'link'));
    const append = (path: string) =>
      t.request('POST', '/api/v1/ext/filer/append', { token: admin, body: { path } });
    for (const path of [join(outside, 'abs.txt'), '../../outside.txt', 'link/out.txt', 'link']) {
      const res = await append(path);
      expect(res.data.data.ok, path).toBe(false);
      expect(res.data.data.error).toMatch(
        /^ctx\.files: .* a plugin's files stay inside its own data folder$/,
      );
      expect(res.data.data.error).not.toContain(dataDir(t));
    }
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync(join(dataDir(t), 'outside.txt'))).toBe(false);
    const fine = await append('notes/today.txt');
    expect(fine.data.data).toEqual({ ok: true, content: 'line\n' });
    expect(readFileSync(join(own, 'notes', 'today.txt'), 'utf8')).toBe('line\n');
  });
});
