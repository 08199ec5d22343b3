import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupService } from '../../src/backups/backup-service.js';
import type { ConfigTree } from '../../src/config/config-tree.js';
import { databaseUrl, PG_ADMIN_URL } from '../helpers/backends.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupFolder, backupWritten, writeTree } from './backup-fixtures.js';

/** One SQLite and one PostgreSQL platform, whichever project runs: a backup must move between them. */
async function sqliteStorage(): Promise<{ tree: ConfigTree; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'backup-sqlite-'));
  return {
    tree: { storage: { data_dir: dir } },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresStorage(): Promise<{ tree: ConfigTree; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'backup-pg-'));
  const name = `platform_backup_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  return {
    tree: { storage: { data_dir: dir }, database: { url: databaseUrl(name) } },
    cleanup: async () => {
      rmSync(dir, { recursive: true, force: true });
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

const serviceOf = (t: TestPlatform) => {
  const service = t.platform.context.registry.get('backups');
  if (!(service instanceof BackupService)) throw new Error('no backups service');
  return service;
};

/** Fills `from` with recognisable data, backs it up, imports the archive into `to`, restores it there. */
async function move(from: TestPlatform, to: TestPlatform, username: string) {
  // Fresh logins: a restore in the other direction replaced the sessions an earlier token belonged to.
  const admin = (await from.login('admin', ADMIN_PASSWORD)).access;
  const alice = await from.createUser(username, ['moderator'], 'alice-password-1');
  const key = await from.request('POST', '/api/v1/auth/api-keys', {
    token: alice.access,
    body: { name: 'moved key', scopes: ['read:system'] },
  });
  expect(key.statusCode).toBe(201);
  await from.request('PUT', '/api/v1/config', {
    token: admin,
    body: { rate_limits: { authenticated: { max: 777 } } },
  });
  writeTree(join(from.platform.context.cfg().storage.data_dir, 'plugins'), {
    'moved/plugin.json': '{"name":"moved"}',
  });
  const backup = await from.request('POST', '/api/v1/backup', { token: admin, body: {} });
  expect(backup.statusCode).toBe(201);
  const id = backup.data.data.backup_id;
  expect((await backupWritten(from, admin, id)).status).toBe('completed');

  const imported = await serviceOf(to).importArchive(join(backupFolder(from), `${id}.tar.gz`), {
    userId: null,
    username: 'test',
  });
  expect(imported).toMatchObject({ id, status: 'completed' });
  const target = (await to.login('admin', ADMIN_PASSWORD)).access;
  const restore = await to.request('POST', `/api/v1/admin/backup/${id}/restore`, {
    token: target,
    body: { confirm_restore: true },
  });
  expect(restore.statusCode, JSON.stringify(restore.data)).toBe(202);
  const task = await to.platform.context.tasks.settled(restore.data.data.restore_id);
  expect(task?.status, JSON.stringify(task)).toBe('completed');
  expect((task?.result as { source_dialect?: string } | undefined)?.source_dialect).toBe(
    from.platform.context.database.dialect,
  );

  // Users, credentials, API keys, settings and plugin files arrive; the target keeps its own signing key.
  const login = await to.login(username, 'alice-password-1');
  const me = await to.request('GET', '/api/v1/auth/me', { token: login.access });
  expect(me.data.data).toMatchObject({ username, roles: ['moderator'] });
  const withKey = await to.request('GET', '/api/v1/auth/me', { apiKey: key.data.data.key });
  expect(withKey.statusCode).toBe(200);
  expect(withKey.data.data.username).toBe(username);
  expect(to.platform.context.cfg().rate_limits.authenticated.max).toBe(777);
  const { existsSync } = await import('node:fs');
  expect(
    existsSync(join(to.platform.context.cfg().storage.data_dir, 'plugins', 'moved', 'plugin.json')),
  ).toBe(true);
  expect((await to.login('admin', ADMIN_PASSWORD)).access).toBeTruthy();
}

describe('moving a backup between SQLite and PostgreSQL', () => {
  const cleanups: (() => Promise<void>)[] = [];
  let sqlite: TestPlatform;
  let postgres: TestPlatform;

  beforeAll(async () => {
    const a = await sqliteStorage();
    const b = await postgresStorage();
    cleanups.push(a.cleanup, b.cleanup);
    sqlite = await startPlatform({}, { storage: a.tree });
    postgres = await startPlatform({}, { storage: b.tree });
  });
  afterAll(async () => {
    await sqlite?.close();
    await postgres?.close();
    for (const c of cleanups) await c();
  });

  it('restores a backup taken on SQLite into PostgreSQL', async () => {
    expect(sqlite.platform.context.database.dialect).toBe('sqlite');
    expect(postgres.platform.context.database.dialect).toBe('postgres');
    await move(sqlite, postgres, 'from-sqlite');
  });

  it('restores a backup taken on PostgreSQL into SQLite', async () => {
    await move(postgres, sqlite, 'from-postgres');
  });
});
