import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import {
  backupFolder,
  backupWritten,
  manifestFor,
  packTar,
  plantArchive,
  tarOf,
  writeTree,
} from './backup-fixtures.js';

/** Restores a backup and expects the refusal, before any task starts or any data changes. */
async function expectRefused(t: TestPlatform, token: string, id: string, reason: string) {
  const users = await t.platform.context.database.db.selectFrom('users').select('id').execute();
  const res = await t.request('POST', `/api/v1/backup/${id}/restore`, { token, body: { confirm: true } });
  expect(res.statusCode, JSON.stringify(res.data)).toBe(422);
  expect(res.data.error.code).toBe('BACKUP_INVALID');
  expect(res.data.error.details.reason).toBe(reason);
  expect(await t.platform.context.database.db.selectFrom('users').select('id').execute()).toEqual(users);
  expect(t.platform.context.maintenance.current().enabled).toBe(false);
  // Nothing is left unpacked, and the lock is free again.
  expect(readdirSync(join(backupFolder(t), '.work')).length).toBe(0);
  const release = await t.platform.context.shared.tryLock('backups', 1000);
  expect(release).toBeDefined();
  await release?.();
  return res.data.error;
}

describe('a restore verifies the archive before it touches anything', () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    mkdirSync(join(backupFolder(t), '.work'), { recursive: true });
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses an archive file that changed on disk after it was written', async () => {
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    await backupWritten(t, admin, res.data.data.backup_id);
    await appendFile(join(backupFolder(t), `${res.data.data.backup_id}.tar.gz`), Buffer.from([0]));
    await expectRefused(t, admin, res.data.data.backup_id, 'checksum_mismatch');
  });

  it('refuses files that are not archives, and archives that are not ours', async () => {
    const garbage = await plantArchive(t, () => {}, {
      pack: async () => Buffer.from('definitely not a tarball'),
    });
    await expectRefused(t, admin, garbage, 'not_an_archive');

    const noManifest = await plantArchive(t, (dir) => writeTree(dir, { 'database/users.jsonl': '{}\n' }));
    await expectRefused(t, admin, noManifest, 'manifest_missing');

    const foreign = await plantArchive(t, async (dir, id) => {
      const manifest = { ...(await manifestFor(t, id, {})), format: 'someone-elses-backup/3' };
      writeTree(dir, { 'manifest.json': JSON.stringify(manifest) });
    });
    await expectRefused(t, admin, foreign, 'manifest_invalid');

    const stray = await plantArchive(t, (dir) =>
      writeTree(dir, { 'manifest.json': '{}', 'etc/passwd': 'x' }),
    );
    const error = await expectRefused(t, admin, stray, 'unexpected_entry');
    expect(error.details.entry).toMatch(/^etc/);
  });

  it('refuses an archive whose files do not match the checksums of its manifest', async () => {
    const tampered = await plantArchive(t, async (dir, id) => {
      const manifest = await manifestFor(
        t,
        id,
        { 'database/users.jsonl': '{"id":"usr_1"}\n' },
        {
          users: { rows: 1, columns: ['id'] },
        },
      );
      writeTree(dir, {
        'manifest.json': JSON.stringify(manifest),
        'database/users.jsonl': '{"id":"usr_2"}\n',
      });
    });
    const error = await expectRefused(t, admin, tampered, 'checksum_mismatch');
    expect(error.details.entry).toBe('database/users.jsonl');

    const unlisted = await plantArchive(t, async (dir, id) => {
      const manifest = await manifestFor(t, id, {});
      writeTree(dir, {
        'manifest.json': JSON.stringify(manifest),
        'database/users.jsonl': '{"id":"usr_2"}\n',
      });
    });
    await expectRefused(t, admin, unlisted, 'unexpected_entry');

    const otherBackup = await plantArchive(t, async (dir) => {
      writeTree(dir, { 'manifest.json': JSON.stringify(await manifestFor(t, 'bkp_someoneelse', {})) });
    });
    await expectRefused(t, admin, otherBackup, 'manifest_mismatch');
  });

  it('refuses entries that would leave the folder: ../ paths, absolute paths, symlinks and hard links', async () => {
    const dataDir = t.platform.context.cfg().storage.data_dir;
    const dotdot = await plantArchive(
      t,
      (dir) => writeTree(dir, { 'inner/manifest.json': '{}', 'escaped.txt': 'out' }),
      {
        pack: (dir) =>
          packTar({ cwd: join(dir, 'inner'), preservePaths: true }, ['manifest.json', '../escaped.txt']),
      },
    );
    await expectRefused(t, admin, dotdot, 'unsafe_path');
    expect(existsSync(join(backupFolder(t), '.work', 'escaped.txt'))).toBe(false);
    expect(existsSync(join(backupFolder(t), 'escaped.txt'))).toBe(false);

    const absolute = await plantArchive(t, (dir) => writeTree(dir, { 'abs.txt': 'absolute' }), {
      pack: (dir) => packTar({ cwd: dir, preservePaths: true }, [join(dir, 'abs.txt')]),
    });
    await expectRefused(t, admin, absolute, 'unsafe_path');

    const symlink = await plantArchive(t, (dir) => {
      writeTree(dir, { 'manifest.json': '{}' });
      mkdirSync(join(dir, 'plugins'));
      symlinkSync(dataDir, join(dir, 'plugins', 'link'));
    });
    await expectRefused(t, admin, symlink, 'unsafe_entry_type');

    const hardlink = await plantArchive(t, () => {}, {
      pack: async () =>
        tarOf([
          { path: 'manifest.json', type: 'File', body: '{}' },
          { path: 'plugins/a.txt', type: 'File', body: 'a' },
          { path: 'plugins/b.txt', type: 'Link', linkpath: 'plugins/a.txt' },
        ]),
    });
    await expectRefused(t, admin, hardlink, 'unsafe_entry_type');
  });

  it('refuses a backup taken from a newer schema than this platform knows', async () => {
    const newer = await plantArchive(t, async (dir, id) => {
      const manifest = await manifestFor(t, id, {});
      manifest.schema_version.push('9999-from-the-future');
      writeTree(dir, { 'manifest.json': JSON.stringify(manifest) });
    });
    const error = await expectRefused(t, admin, newer, 'schema_incompatible');
    expect(error.details.unknown_migrations).toEqual(['9999-from-the-future']);
  });
});

describe('a restore bounds what an archive may unpack', () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    t = await startPlatform({
      backups: { max_archive_entries: 10, max_entry_bytes: 2048, max_unpacked_bytes: 4096 },
    });
    admin = await t.adminToken();
    mkdirSync(join(backupFolder(t), '.work'), { recursive: true });
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses too many entries, too large an entry, and too much in total, while streaming', async () => {
    const many = await plantArchive(t, (dir) => {
      for (let i = 0; i < 20; i++) writeTree(dir, { [`plugins/f${i}.txt`]: 'x' });
    });
    await expectRefused(t, admin, many, 'too_many_entries');

    const large = await plantArchive(t, (dir) => writeTree(dir, { 'plugins/big.bin': 'y'.repeat(3000) }));
    await expectRefused(t, admin, large, 'entry_too_large');

    const total = await plantArchive(t, (dir) => {
      for (let i = 0; i < 3; i++) writeTree(dir, { [`plugins/part${i}.bin`]: 'z'.repeat(1900) });
    });
    await expectRefused(t, admin, total, 'archive_too_large');
  });
});

describe('encrypted backups', () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    t = await startPlatform({ backups: { encryption_key: 'correct horse battery staple' } });
    admin = await t.adminToken();
    mkdirSync(join(backupFolder(t), '.work'), { recursive: true });
  });
  afterAll(async () => {
    await t.close();
  });

  it('writes AES-256-GCM archives that restore with the key and are refused with another or none', async () => {
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: { encryption: true } });
    expect(res.statusCode).toBe(201);
    const id = res.data.data.backup_id;
    expect(res.data.data.encryption).toBe(true);
    await backupWritten(t, admin, id);
    const download = await t.request('GET', res.data.data.download_url, { token: admin });
    expect(download.headers['content-type']).toBe('application/octet-stream');
    expect(download.headers['content-disposition']).toContain(`${id}.tar.gz.enc`);
    expect(download.rawPayload.subarray(0, 8).toString()).toBe('PLATBKP1');
    // Neither gzip nor readable text: the plaintext never reaches the disk.
    expect(download.rawPayload.includes(Buffer.from('manifest.json'))).toBe(false);

    await t.createUser('after-encrypted-backup');
    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { backups: { encryption_key: 'a wrong passphrase 42' } },
    });
    await expectRefused(t, admin, id, 'decryption_failed');
    await t.request('PUT', '/api/v1/config', { token: admin, body: { backups: { encryption_key: '' } } });
    const none = await t.request('POST', `/api/v1/backup/${id}/restore`, {
      token: admin,
      body: { confirm: true },
    });
    expect(none.statusCode).toBe(422);
    expect(none.data.error.code).toBe('BACKUP_KEY_REQUIRED');

    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { backups: { encryption_key: 'correct horse battery staple' } },
    });
    const ok = await t.request('POST', `/api/v1/backup/${id}/restore`, {
      token: admin,
      body: { confirm: true, components: ['database'] },
    });
    expect(ok.statusCode).toBe(202);
    const task = await t.platform.context.tasks.settled(ok.data.data.restore_id);
    expect(task?.status).toBe('completed');
    const users = await t.platform.context.database.db.selectFrom('users').select('username').execute();
    expect(users.map((u) => u.username)).not.toContain('after-encrypted-backup');
    // The safety backup of an encrypted restore is encrypted too.
    const safety = await t.platform.context.database.db
      .selectFrom('backups')
      .selectAll()
      .where('id', '=', String((task?.details as Record<string, unknown> | undefined)?.['safety_backup_id']))
      .executeTakeFirstOrThrow();
    expect(safety.encryption).toBe(1);
  });
});
