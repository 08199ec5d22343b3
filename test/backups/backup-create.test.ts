import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupFolder, backupWritten, readArchive, sha256 } from './backup-fixtures.js';

describe('creating, listing and downloading backups', () => {
  let t: TestPlatform;
  let admin: string;
  const announced: PlatformEventMap['platform.event'][] = [];

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    t.platform.context.events.on('platform.event', (e) => announced.push(e));
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers POST /backup before the archive exists, then writes a .tar.gz and lists it completed', async () => {
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    expect(res.statusCode).toBe(201);
    const b = res.data.data;
    expect(b).toMatchObject({
      status: 'created',
      includes: ['configuration', 'database', 'plugins'],
      download_url: `/api/v1/backup/${b.backup_id}/download`,
      task_url: `/api/v1/tasks/${b.backup_id}`,
      type: 'manual',
      compression: true,
      encryption: false,
      size_bytes: 0,
      sha256: null,
    });
    expect(b.backup_id).toMatch(/^bkp_/);
    const file = join(backupFolder(t), `${b.backup_id}.tar.gz`);
    // The answer came first: the archive is written by the backup's task afterwards.
    expect(existsSync(file)).toBe(false);

    const listed = await backupWritten(t, admin, b.backup_id);
    const bytes = readFileSync(file);
    expect(listed).toMatchObject({
      id: b.backup_id,
      status: 'completed',
      type: 'manual',
      size_bytes: bytes.length,
      size_mb: Math.round((bytes.length / 1_048_576) * 1000) / 1000,
      sha256: sha256(bytes),
      includes: ['configuration', 'database', 'plugins'],
      created_at: b.created_at,
    });
    const task = (await t.request('GET', b.task_url, { token: admin })).data.data;
    expect(task).toMatchObject({
      type: 'backup',
      status: 'completed',
      progress: 1,
      result: { backup_id: b.backup_id, size_bytes: bytes.length },
    });
  });

  it('holds a manifest with checksums and one JSON Lines file per table, from a consistent dump', async () => {
    await t.createUser('dumped-user');
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: { include: ['database'] } });
    expect(res.statusCode).toBe(201);
    const written = await backupWritten(t, admin, res.data.data.backup_id);
    const download = await t.request('GET', res.data.data.download_url, { token: admin });
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toBe('application/gzip');
    expect(download.headers['content-disposition']).toBe(
      `attachment; filename="${res.data.data.backup_id}.tar.gz"`,
    );
    expect(download.headers['x-backup-sha256']).toBe(written.sha256);
    const files = await readArchive(download.rawPayload);
    const manifest = JSON.parse(files.get('manifest.json')!);
    expect(manifest).toMatchObject({
      format: 'platform-backup/1',
      backup_id: res.data.data.backup_id,
      dialect: t.platform.context.database.dialect,
      includes: ['database'],
    });
    expect(manifest.schema_version).toContain('0001-core');
    expect(manifest.schema_version).toContain('0006-backups');
    // Every table found at run time, without the migration bookkeeping and the catalogue itself.
    expect(Object.keys(manifest.tables)).toEqual(
      expect.arrayContaining(['users', 'sessions', 'api_keys', 'events']),
    );
    for (const skipped of ['platform_migrations', 'platform_migrations_lock', 'backups', 'tasks']) {
      expect(manifest.tables[skipped]).toBeUndefined();
    }
    for (const [path, { sha256: digest, bytes }] of Object.entries<{ sha256: string; bytes: number }>(
      manifest.files,
    )) {
      expect(sha256(files.get(path)!), path).toBe(digest);
      expect(Buffer.byteLength(files.get(path)!), path).toBe(bytes);
    }
    const users = files
      .get('database/users.jsonl')!
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(users.map((u) => u.username).sort()).toEqual(['admin', 'dumped-user']);
    expect(manifest.tables.users.rows).toBe(2);
  });

  it('never puts secrets in an archive: runtime secrets and the JWT signing key stay out', async () => {
    const put = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: {
        mail: { smtp_url: 'smtp://user:very-secret@mail.test' },
        rate_limits: { authenticated: { max: 4321 } },
      },
    });
    expect(put.statusCode).toBe(200);
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    await backupWritten(t, admin, res.data.data.backup_id);
    const download = await t.request('GET', res.data.data.download_url, { token: admin });
    const files = await readArchive(download.rawPayload);
    const config = JSON.parse(files.get('config/overrides.json')!);
    expect(config.overrides['rate_limits.authenticated.max'].value).toBe(4321);
    expect(config.overrides['mail.smtp_url']).toBeUndefined();
    expect(config.metadata.config_version).toBe(t.platform.context.config.metadata().config_version);
    const everything = [...files.values()].join('\n');
    expect(everything).not.toContain('very-secret');
    // Generated installation secrets live in system_state under their setting's name; none is dumped.
    expect(files.get('database/system_state.jsonl') ?? '').not.toContain('auth.jwt_secret');
    expect(files.get('database/system_state.jsonl') ?? '').not.toContain('events.encryption_key');
  });

  it('writes a plain .tar without compression, and packs the plugin folder', async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const plugins = join(t.platform.context.cfg().storage.data_dir, 'plugins', 'hello');
    mkdirSync(plugins, { recursive: true });
    writeFileSync(join(plugins, 'plugin.json'), '{"name":"hello"}');
    const res = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['plugins'], compression: false },
    });
    expect(res.statusCode).toBe(201);
    await backupWritten(t, admin, res.data.data.backup_id);
    expect(existsSync(join(backupFolder(t), `${res.data.data.backup_id}.tar`))).toBe(true);
    const download = await t.request('GET', res.data.data.download_url, { token: admin });
    expect(download.headers['content-type']).toBe('application/x-tar');
    expect(download.rawPayload.subarray(257, 262).toString()).toBe('ustar');
    const files = await readArchive(download.rawPayload);
    expect(files.get('plugins/hello/plugin.json')).toBe('{"name":"hello"}');
    expect([...files.keys()].some((p) => p.startsWith('database/'))).toBe(false);
  });

  it('names admin backups, spells the configuration component "config", and exports logs when asked', async () => {
    const res = await t.request('POST', '/api/v1/admin/backup', {
      token: admin,
      body: { name: 'before upgrade', include_plugins: false, include_logs: true },
    });
    expect(res.statusCode).toBe(201);
    const b = res.data.data.backup;
    expect(b).toMatchObject({
      name: 'before upgrade',
      status: 'created',
      includes: ['config', 'database', 'logs'],
      download_url: `/api/v1/admin/backup/${b.id}/download`,
      task_url: `/api/v1/tasks/${b.id}`,
    });
    expect(b.size_mb).toBeGreaterThanOrEqual(0);
    await backupWritten(t, admin, b.id);
    const list = await t.request('GET', '/api/v1/admin/backup', { token: admin });
    expect(list.data.data.backups.find((x: { id: string }) => x.id === b.id)).toMatchObject({
      name: 'before upgrade',
      status: 'completed',
      includes: ['config', 'database', 'logs'],
    });
    const download = await t.request('GET', b.download_url, { token: admin });
    expect(download.statusCode).toBe(200);
    const files = await readArchive(download.rawPayload);
    const manifest = JSON.parse(files.get('manifest.json')!);
    expect(manifest.files['logs/log_entries.jsonl']).toBeDefined();
    // The log store is its own component, not a table of the database dump.
    expect(manifest.tables['log_entries']).toBeUndefined();
  });

  it('answers both create paths with the same fields, each in its own spelling of the components', async () => {
    const core = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { name: 'core named', include: ['configuration', 'database'] },
    });
    expect(core.statusCode, core.body).toBe(201);
    await backupWritten(t, admin, core.data.data.backup_id);
    const admin_ = await t.request('POST', '/api/v1/admin/backup', {
      token: admin,
      body: { name: 'admin listed', include: ['config', 'database'] },
    });
    expect(admin_.statusCode, admin_.body).toBe(201);
    const c = core.data.data;
    const a = admin_.data.data.backup;
    // The contract names the id `backup_id` on the core path and `backup.id` on the admin path: both carry both.
    expect(c.id).toBe(c.backup_id);
    expect(admin_.data.data.backup_id).toBe(a.id);
    const { backup_id: _, ...coreFields } = c;
    expect(Object.keys(coreFields).sort()).toEqual(Object.keys(a).sort());
    expect(c).toMatchObject({
      name: 'core named',
      includes: ['configuration', 'database'],
      created_by: 'admin',
    });
    expect(a).toMatchObject({ name: 'admin listed', includes: ['config', 'database'], created_by: 'admin' });
    await backupWritten(t, admin, a.id);
    const listed = (await t.request('GET', '/api/v1/backup', { token: admin })).data.data.backups;
    const adminListed = (await t.request('GET', '/api/v1/admin/backup', { token: admin })).data.data.backups;
    expect(Object.keys(listed[0]).sort()).toEqual(Object.keys(adminListed[0]).sort());

    expect(a.includes).not.toContain('plugins');
  });

  it('audits and announces every backup', async () => {
    const res = await t.request('POST', '/api/v1/admin/backup', { token: admin, body: { name: 'audited' } });
    const id = res.data.data.backup.id;
    await backupWritten(t, admin, id);
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('resource_id', '=', id)
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: 'backup.create', resource_type: 'backup', admin_user: 'admin' });
    const event = announced.find((e) => e.type === 'backup.created' && e.data['backup_id'] === id);
    expect(event).toMatchObject({
      source: 'system',
      actor: { username: 'admin' },
      data: { name: 'audited' },
    });
  });

  it('refuses encryption without a configured key, and a backup of nothing', async () => {
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: { encryption: true } });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.code).toBe('BACKUP_KEY_REQUIRED');
    expect(res.data.error.details).toMatchObject({ field: 'encryption' });
    const none = await t.request('POST', '/api/v1/admin/backup', {
      token: admin,
      body: { include_database: false, include_config: false, include_plugins: false },
    });
    expect(none.statusCode).toBe(422);
    expect(none.data.error.code).toBe('VALIDATION_ERROR');
    const bad = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['everything'] },
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.data.error.code).toBe('VALIDATION_ERROR');
  });

  it('answers 404 for an unknown backup and asks for admin:backup', async () => {
    for (const url of ['/api/v1/backup/bkp_nope/download', '/api/v1/admin/backup/bkp_nope/download']) {
      const res = await t.request('GET', url, { token: admin });
      expect(res.statusCode).toBe(404);
      expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
    }
    const restore = await t.request('POST', '/api/v1/backup/bkp_nope/restore', {
      token: admin,
      body: { confirm: true },
    });
    expect(restore.statusCode).toBe(404);
    const user = await t.createUser('plain-user');
    const core = await t.request('POST', '/api/v1/backup', { token: user.access, body: {} });
    expect(core.statusCode).toBe(403);
    expect(core.data.error.code).toBe('AUTHORIZATION_DENIED');
    const adminPath = await t.request('GET', '/api/v1/admin/backup', { token: user.access });
    expect(adminPath.statusCode).toBe(403);
    expect(adminPath.data.error.code).toBe('ADMIN_REQUIRED');
  });

  it('refuses a download whose file was changed on disk since it was written', async () => {
    const res = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['configuration'] },
    });
    await backupWritten(t, admin, res.data.data.backup_id);
    const { appendFileSync } = await import('node:fs');
    appendFileSync(join(backupFolder(t), `${res.data.data.backup_id}.tar.gz`), 'x');
    const download = await t.request('GET', res.data.data.download_url, { token: admin });
    expect(download.statusCode).toBe(422);
    expect(download.data.error).toMatchObject({
      code: 'BACKUP_INVALID',
      details: { reason: 'checksum_mismatch' },
    });
  });
});
