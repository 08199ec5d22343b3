import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import {
  backupFolder,
  createManualBackup,
  FAILED_BACKUP_ROW,
  importWhenFree,
  listedBackup,
} from './backup-fixtures.js';

// A full database through SQLite's max_page_count (past it every write fails, as on a full disk). SQLite only:
// the cluster project leaves this file out (vitest.config.ts).
describe('backups: an import whose row cannot be written', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  const outside = mkdtempSync(join(tmpdir(), 'backup-import-full-'));

  beforeAll(async () => {
    t = await startPlatform({ backups: { lock_lease_seconds: 0.5 } });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
    rmSync(outside, { recursive: true, force: true });
  });

  const createBackup = () => createManualBackup(t, admin);
  const listed = (id: string) => listedBackup(t, admin, id);

  it('an import whose row cannot be written leaves no file; importing again afterwards works', async () => {
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
              ...FAILED_BACKUP_ROW,
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
});
