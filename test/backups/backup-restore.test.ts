import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dependencyOrder, describeTables, type LooseDb } from '../../src/backups/database-schema.js';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { backend } from '../helpers/backends.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import {
  backupWritten,
  plantArchive,
  readArchive,
  settledTask,
  sha256,
  writeTree,
} from './backup-fixtures.js';

const usernames = async (t: TestPlatform) =>
  (
    await t.platform.context.database.db.selectFrom('users').select('username').orderBy('username').execute()
  ).map((u) => u.username);

describe('restoring a backup', () => {
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

  it('refuses a restore without confirmation on both paths', async () => {
    const created = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['configuration'] },
    });
    const id = created.data.data.backup_id;
    await backupWritten(t, admin, id);
    const core = await t.request('POST', `/api/v1/backup/${id}/restore`, { token: admin, body: {} });
    expect(core.statusCode).toBe(422);
    expect(core.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'confirm' } });
    expect(core.data.error.message).toMatch(/confirm/);
    const adminPath = await t.request('POST', `/api/v1/admin/backup/${id}/restore`, {
      token: admin,
      body: { confirm_restore: false },
    });
    expect(adminPath.statusCode).toBe(422);
    expect(adminPath.data.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { field: 'confirm_restore' },
    });
  });

  it('puts database, configuration and plugins back as a task, after a safety backup of the current state', async () => {
    const ctx = t.platform.context;
    await t.createUser('alice');
    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 1111 } } },
    });
    const pluginDir = join(ctx.cfg().storage.data_dir, 'plugins');
    writeTree(pluginDir, { 'kept/plugin.json': '{"name":"kept"}' });
    const backup = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    expect(backup.statusCode).toBe(201);
    const backupId = backup.data.data.backup_id;
    expect((await backupWritten(t, admin, backupId)).status).toBe('completed');

    const bob = await t.createUser('bob');
    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 2222 } } },
    });
    writeTree(pluginDir, { 'late/plugin.json': '{"name":"late"}' });
    const versionBefore = Number(ctx.config.metadata().config_version);

    const res = await t.request('POST', `/api/v1/backup/${backupId}/restore`, {
      token: admin,
      body: { confirm: true },
    });
    expect(res.statusCode).toBe(202);
    const started = res.data.data;
    expect(started).toMatchObject({
      status: 'started',
      backup_id: backupId,
      components: ['configuration', 'database', 'plugins'],
      task_url: `/api/v1/tasks/${started.restore_id}`,
    });
    expect(started.restore_id).toMatch(/^rst_/);
    expect(Number.isInteger(started.estimated_duration_ms)).toBe(true);

    const task = await settledTask(t, admin, started.restore_id);
    expect(task).toMatchObject({ type: 'restore', status: 'completed', progress: 1 });
    expect(task.details.steps.map((s: { status: string }) => s.status)).toEqual(Array(5).fill('completed'));
    expect(task.result.tables.users).toBe(2);

    expect(await usernames(t)).toEqual(['admin', 'alice']);
    // bob's user and session are gone everywhere, caches included; the admin's session was in the backup.
    expect((await t.request('GET', '/api/v1/auth/me', { token: bob.access })).statusCode).toBe(401);
    expect((await t.request('GET', '/api/v1/auth/me', { token: admin })).statusCode).toBe(200);
    expect(ctx.cfg().rate_limits.authenticated.max).toBe(1111);
    expect(Number(ctx.config.metadata().config_version)).toBeGreaterThan(versionBefore);
    expect(existsSync(join(pluginDir, 'kept', 'plugin.json'))).toBe(true);
    expect(existsSync(join(pluginDir, 'late'))).toBe(false);
    expect(ctx.maintenance.current().enabled).toBe(false);

    // The safety backup holds the state the restore replaced.
    const safetyId = task.details.safety_backup_id;
    const list = await t.request('GET', '/api/v1/backup', { token: admin });
    expect(list.data.data.backups.find((b: { id: string }) => b.id === safetyId)).toMatchObject({
      status: 'completed',
      name: `before restore ${started.restore_id}`,
    });
    const safety = await t.request('GET', `/api/v1/backup/${safetyId}/download`, { token: admin });
    const files = await readArchive(safety.rawPayload);
    expect(files.get('database/users.jsonl')).toContain('"bob"');
    expect(files.get('plugins/late/plugin.json')).toBe('{"name":"late"}');

    // Recorded in the restored audit history, and announced.
    const audit = await ctx.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'backup.restore')
      .where('resource_id', '=', backupId)
      .execute();
    expect(audit.map((a) => JSON.parse(a.details).status)).toContain('completed');
    expect(announced.find((e) => e.type === 'backup.restored')).toMatchObject({
      data: { backup_id: backupId, restore_id: started.restore_id, safety_backup_id: safetyId },
      actor: { username: 'admin' },
    });
  });

  it('restores only the components asked for, keeps maintenance as it was, and can skip the safety backup', async () => {
    const ctx = t.platform.context;
    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 3333 } } },
    });
    const backup = await t.request('POST', '/api/v1/admin/backup', {
      token: admin,
      body: { name: 'no plugins', include_plugins: false },
    });
    const backupId = backup.data.data.backup.id;
    await backupWritten(t, admin, backupId);
    await t.createUser('carol');
    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 4444 } } },
    });
    const on = await t.request('POST', '/api/v1/admin/system/maintenance', {
      token: admin,
      body: { enabled: true, message: 'planned work' },
    });
    expect(on.statusCode).toBe(200);
    const count = (await t.request('GET', '/api/v1/backup', { token: admin })).data.data.backups.length;

    const res = await t.request('POST', `/api/v1/admin/backup/${backupId}/restore`, {
      token: admin,
      body: { components: ['config'], confirm_restore: true, create_backup_before_restore: false },
    });
    expect(res.statusCode).toBe(202);
    expect(res.data.data.components).toEqual(['config']);
    const task = await settledTask(t, admin, res.data.data.restore_id);
    expect(task.status).toBe('completed');
    expect(task.details.steps.find((s: { name: string }) => s.name === 'safety_backup').status).toBe(
      'skipped',
    );

    expect(ctx.cfg().rate_limits.authenticated.max).toBe(3333);
    expect(await usernames(t)).toContain('carol');
    expect(ctx.maintenance.current()).toMatchObject({ enabled: true, message: 'planned work' });
    expect((await t.request('GET', '/api/v1/backup', { token: admin })).data.data.backups.length).toBe(count);
    await t.request('POST', '/api/v1/admin/system/maintenance', { token: admin, body: { enabled: false } });

    const absent = await t.request('POST', `/api/v1/backup/${backupId}/restore`, {
      token: admin,
      body: { components: ['plugins'], confirm: true },
    });
    expect(absent.statusCode, JSON.stringify([backup.data, absent.data])).toBe(422);
    expect(absent.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'components' } });
  });

  it('leaves every row as it was when the last table of the archive fails to load', async () => {
    const ctx = t.platform.context;
    const db = ctx.database.db;
    const backup = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['database'] },
    });
    await backupWritten(t, admin, backup.data.data.backup_id);
    const download = await t.request('GET', backup.data.data.download_url, { token: admin });
    const files = await readArchive(download.rawPayload);
    const manifest = JSON.parse(files.get('manifest.json')!);

    // The table loaded last (parents before children) gets a row that breaks its primary key.
    const order = dependencyOrder(await describeTables(db as unknown as LooseDb, ctx.database.dialect))
      .map((table) => table.name)
      .filter((name) => manifest.tables[name]?.rows > 0);
    const last = order[order.length - 1]!;
    const path = `database/${last}.jsonl`;
    const content = files.get(path)!;
    const corrupt = `${content}${content.split('\n')[0]}\n`;
    const planted = await plantArchive(t, async (dir, id) => {
      manifest.backup_id = id;
      manifest.tables[last].rows += 1;
      manifest.files[path] = { sha256: sha256(corrupt), bytes: Buffer.byteLength(corrupt) };
      writeTree(dir, {
        ...Object.fromEntries(files),
        [path]: corrupt,
        'manifest.json': JSON.stringify(manifest),
      });
    });

    // State that the restore would replace: a user and a setting from after the backup.
    await t.createUser('dave');
    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 5555 } } },
    });
    const snapshot = async () => ({
      users: await db.selectFrom('users').selectAll().orderBy('id').execute(),
      apiKeys: await db.selectFrom('api_keys').selectAll().orderBy('id').execute(),
      overrides: await db.selectFrom('config_overrides').selectAll().orderBy('key').execute(),
      last: await db
        .selectFrom(last as 'users')
        .selectAll()
        .execute()
        // The live maintenance switch is flipped on and back off by the restore itself.
        .then((rows) =>
          rows
            .map((r) => JSON.stringify(r))
            .filter((r) => !r.includes('"key":"maintenance"'))
            .sort(),
        ),
    });
    const before = await snapshot();

    const res = await t.request('POST', `/api/v1/backup/${planted}/restore`, {
      token: admin,
      body: { confirm: true, create_backup_before_restore: false },
    });
    expect(res.statusCode).toBe(202);
    const task = await settledTask(t, admin, res.data.data.restore_id);
    expect(task.status).toBe('failed');
    // The step that failed says so, none is left running, and the progress reached is kept.
    expect(task.details.steps.find((s: { name: string }) => s.name === 'database').status).toBe('failed');
    expect(task.details.steps.map((s: { status: string }) => s.status)).not.toContain('running');
    expect(task.progress).toBeGreaterThanOrEqual(0.3);
    // Its outcome is audited, as a completed restore's is, after the "started" entry.
    const audit = await t.request(
      'GET',
      `/api/v1/admin/audit-log?action=backup.restore&resource_id=${planted}`,
      { token: admin },
    );
    const outcomes = audit.data.data.audit_entries.map(
      (e: { details: Record<string, unknown> }) => e.details,
    );
    expect(outcomes).toContainEqual(
      expect.objectContaining({ restore_id: res.data.data.restore_id, status: 'started' }),
    );
    expect(outcomes).toContainEqual(
      expect.objectContaining({
        restore_id: res.data.data.restore_id,
        status: 'failed',
        error: task.error,
      }),
    );

    expect(await snapshot()).toEqual(before);
    expect(await usernames(t)).toContain('dave');
    expect(ctx.maintenance.current().enabled).toBe(false);
    // The lock was released with the failure.
    const next = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    expect(next.statusCode).toBe(201);
    expect((await backupWritten(t, admin, next.data.data.backup_id)).status).toBe('completed');
  });

  it('refuses a second backup or restore while one runs: BACKUP_IN_PROGRESS', async () => {
    const [a, b] = await Promise.all([
      t.request('POST', '/api/v1/backup', { token: admin, body: {} }),
      t.request('POST', '/api/v1/admin/backup', { token: admin, body: {} }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([201, 409]);
    expect([a, b].find((r) => r.statusCode === 409)!.data.error.code).toBe('BACKUP_IN_PROGRESS');
    // The lock is held until the archive is written, after the answer.
    const createdId = a.data.data?.backup_id ?? b.data.data.backup.id;
    expect((await backupWritten(t, admin, createdId)).status).toBe('completed');

    const held = await t.platform.context.shared.tryLock('backups', 10_000);
    try {
      const restore = await t.request('POST', `/api/v1/backup/${createdId}/restore`, {
        token: admin,
        body: { confirm: true },
      });
      expect(restore.statusCode).toBe(409);
      expect(restore.data.error.code).toBe('BACKUP_IN_PROGRESS');
    } finally {
      await held?.();
    }
  });

  // Embedded mode is one process by design (its locks live in memory); across instances needs the cluster.
  if (backend === 'cluster') {
    it('refuses a backup on one instance while another instance of the cluster writes one', async () => {
      const other = await startPlatform({}, { storage: t.storage });
      try {
        const otherAdmin = (await other.login('admin', ADMIN_PASSWORD)).access;
        const [a, b] = await Promise.all([
          t.request('POST', '/api/v1/backup', { token: admin, body: {} }),
          other.request('POST', '/api/v1/backup', { token: otherAdmin, body: {} }),
        ]);
        expect([a.statusCode, b.statusCode].sort()).toEqual([201, 409]);
        expect([a, b].find((r) => r.statusCode === 409)!.data.error.code).toBe('BACKUP_IN_PROGRESS');
        // Both instances see the same catalogue and archive folder.
        const created = [a, b].find((r) => r.statusCode === 201)!.data.data.backup_id;
        const list = await other.request('GET', '/api/v1/backup', { token: otherAdmin });
        expect(list.data.data.backups.some((x: { id: string }) => x.id === created)).toBe(true);
        expect((await backupWritten(t, admin, created)).status).toBe('completed');
      } finally {
        await other.close();
      }
    });
  }

  it('keeps the plugin folder untouched when plugins are not restored', async () => {
    const pluginDir = join(t.platform.context.cfg().storage.data_dir, 'plugins');
    mkdirSync(pluginDir, { recursive: true });
    writeFileSync(join(pluginDir, 'marker.txt'), 'stay');
    const backup = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['configuration'] },
    });
    await backupWritten(t, admin, backup.data.data.backup_id);
    const res = await t.request('POST', `/api/v1/backup/${backup.data.data.backup_id}/restore`, {
      token: admin,
      body: { confirm: true, create_backup_before_restore: false },
    });
    const task = await settledTask(t, admin, res.data.data.restore_id);
    expect(task.status).toBe('completed');
    expect(existsSync(join(pluginDir, 'marker.txt'))).toBe(true);
  });
  it('restores the credentials of the backup: its passwords work again, later sessions end', async () => {
    const backup = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['database'] },
    });
    await backupWritten(t, admin, backup.data.data.backup_id);
    const changed = await t.request('POST', '/api/v1/auth/change-password', {
      token: admin,
      body: { current_password: ADMIN_PASSWORD, new_password: 'changed-after-backup' },
    });
    expect(changed.statusCode).toBe(200);
    const fresh = (await t.login('admin', 'changed-after-backup')).access;
    const res = await t.request('POST', `/api/v1/backup/${backup.data.data.backup_id}/restore`, {
      token: fresh,
      body: { confirm: true, create_backup_before_restore: false },
    });
    expect(res.statusCode).toBe(202);
    // The caller's own session did not exist at backup time, so it cannot poll afterwards: wait in process.
    const task = await t.platform.context.tasks.settled(res.data.data.restore_id);
    expect(task?.status).toBe('completed');
    expect((await t.request('GET', '/api/v1/auth/me', { token: fresh })).statusCode).toBe(401);
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'admin', password: 'changed-after-backup' },
    });
    expect(login.statusCode).toBe(401);
    expect((await t.login('admin', ADMIN_PASSWORD)).access).toBeTruthy();
  });
});
