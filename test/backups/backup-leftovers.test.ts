import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupFolder, createManualBackup, importWhenFree, listedBackup } from './backup-fixtures.js';

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

  const createBackup = () => createManualBackup(t, admin);
  const listed = (id: string) => listedBackup(t, admin, id);

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
