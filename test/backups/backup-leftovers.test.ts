import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupService } from '../../src/backups/backup-service.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupFolder } from './backup-fixtures.js';

const serviceOf = (t: TestPlatform) => {
  const service = t.platform.context.registry.get('backups');
  if (!(service instanceof BackupService)) throw new Error('no backups service');
  return service;
};

const ORIGIN = { userId: null, username: 'test' };

/** A catalogue row of a failed backup, without a file. */
const filler = {
  type: 'manual',
  status: 'failed',
  includes: '["database"]',
  size_bytes: 0,
  compression: 0,
  encryption: 0,
  sha256: '',
  duration_ms: 0,
  created_at: '2026-01-01T00:00:00.000Z',
  completed_at: '2026-01-01T00:00:00.000Z',
  created_by: 'test',
  error: 'filler',
};

/** Imports once no other backup work (the recovery pass of this test's short lease) holds the lock. */
async function importWhenFree(t: TestPlatform, source: string) {
  for (let i = 0; ; i++) {
    try {
      return await serviceOf(t).importArchive(source, ORIGIN);
    } catch (err) {
      if ((err as { code?: string }).code !== 'BACKUP_IN_PROGRESS' || i > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

// No archive file is kept without a completed row naming it: not after a crash, not after a failure.
describe('backups: no archive left behind by an interrupted or failed write', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  const outside = mkdtempSync(join(tmpdir(), 'backup-leftovers-'));

  beforeAll(async () => {
    // A short lock lease: the recovery pass that settles leftovers runs every half second.
    t = await startPlatform({ backups: { lock_lease_seconds: 0.5 } });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
    rmSync(outside, { recursive: true, force: true });
  });

  const createBackup = async () => {
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    expect(res.statusCode).toBe(201);
    return res.data.data.backup_id as string;
  };
  const listed = async (id: string) =>
    ((await t.request('GET', '/api/v1/backup', { token: admin })).data.data.backups as any[]).find(
      (b) => b.id === id,
    );

  it('removes the archive of a backup whose process died after naming the file, before its row said completed', async () => {
    const id = await createBackup();
    const file = join(backupFolder(t), `${id}.tar.gz`);
    expect(existsSync(file)).toBe(true);
    // What the death leaves: the archive under its final name, the row still `running`.
    await t.platform.context.database.db
      .updateTable('backups')
      .set({ status: 'running', completed_at: null })
      .where('id', '=', id)
      .execute();
    expect(await eventually(async () => (await listed(id))?.status === 'failed', 10_000)).toBe(true);
    expect(existsSync(file)).toBe(false);
    // The download of a failed backup is refused as before (not a file served for a failed row).
    const download = await t.request('GET', `/api/v1/backup/${id}/download`, { token: admin });
    expect(download.statusCode).toBe(409);
  });

  it('an import whose row cannot be written leaves no file; importing again afterwards works', async (ctx) => {
    if (t.backend !== 'sqlite') ctx.skip(); // max_page_count (a full disk) exists on SQLite only
    // An archive from "elsewhere": written here, then taken out of this catalogue and folder.
    const id = await createBackup();
    const source = join(outside, `${id}.tar.gz`);
    const file = join(backupFolder(t), `${id}.tar.gz`);
    copyFileSync(file, source);
    rmSync(file);
    const db = t.platform.context.database.db;
    await db.deleteFrom('backups').where('id', '=', id).execute();

    // Fill the database up to max_page_count (past it every write fails, as on a full disk), the catalogue's
    // own pages included: failed rows of growing-smaller names until not even the smallest fits.
    const { rows } = await sql<{ page_count: number }>`pragma page_count`.execute(db);
    await sql.raw(`pragma max_page_count = ${rows[0]!.page_count + 1}`).execute(db);
    let n = 0;
    try {
      for (const size of [4000, 400, 40, 1]) {
        for (;;) {
          n += 1;
          const ok = await db
            .insertInto('backups')
            .values({
              ...filler,
              id: `bkp_fill_${n}`,
              name: 'x'.repeat(size),
              file_name: `bkp_fill_${n}.tar`,
            })
            .execute()
            .then(() => true)
            .catch(() => false);
          if (!ok) break;
        }
      }
      await expect(importWhenFree(t, source)).rejects.toThrow(/full/);
      expect(existsSync(file)).toBe(false);
      expect(existsSync(`${file}.partial`)).toBe(false);
    } finally {
      await sql.raw('pragma max_page_count = 1073741823').execute(db);
      await db.deleteFrom('backups').where('id', 'like', 'bkp_fill_%').execute();
    }
    expect(await listed(id)).toBeUndefined();

    const imported = await importWhenFree(t, source);
    expect(imported).toMatchObject({ id, status: 'completed' });
    expect(existsSync(file)).toBe(true);
    expect((await listed(id))?.status).toBe('completed');
  });

  it('an import interrupted before its row said completed is settled, and can be imported again', async () => {
    const id = await createBackup();
    const source = join(outside, `again-${id}.tar.gz`);
    const file = join(backupFolder(t), `${id}.tar.gz`);
    copyFileSync(file, source);
    // The interrupted import: its row `running`, its file placed; the recovery fails the row, removes the file.
    await t.platform.context.database.db
      .updateTable('backups')
      .set({ status: 'running', completed_at: null })
      .where('id', '=', id)
      .execute();
    expect(await eventually(async () => (await listed(id))?.status === 'failed', 10_000)).toBe(true);
    expect(existsSync(file)).toBe(false);
    // Retrying the import is not refused as a conflict with the failed leftover.
    const imported = await importWhenFree(t, source);
    expect(imported).toMatchObject({ id, status: 'completed' });
    expect((await listed(id))?.status).toBe('completed');
    expect(existsSync(file)).toBe(true);
  });
});
