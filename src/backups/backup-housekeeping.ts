import { readdir, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { PlatformConfig } from '../config/config-schema.js';
import { nowIso } from '../kernel/new-id.js';
import { backupFolder } from './backup-files.js';
import type { BackupStore } from './backup-store.js';

/**
 * Retention of scheduled backups: those beyond the newest `backups.retention_count` are deleted, file and
 * row, oldest first. Manual backups are never deleted here. Resolves to the ids deleted.
 */
export async function deleteBeyondRetention(store: BackupStore, cfg: PlatformConfig): Promise<string[]> {
  const deleted: string[] = [];
  for (const old of await store.beyondNewest('scheduled', cfg.backups.retention_count)) {
    await rm(join(backupFolder(cfg), old.file_name), { force: true });
    await store.delete(old.id);
    deleted.push(old.id);
  }
  return deleted;
}

/**
 * Rows left `running` and work files left behind by a process that died mid-backup (or mid-import). The caller
 * holds the backup lock, so no backup runs anywhere and whatever is still `running` is an orphan. Its archive
 * goes too, as a failed backup's does: the process may have died after the archive got its final name but
 * before its row said `completed`, and no file of a failed backup is ever kept (nor could it be deleted).
 */
export async function settleOrphans(store: BackupStore, cfg: PlatformConfig): Promise<void> {
  const folder = backupFolder(cfg);
  for (const orphan of await store.running()) {
    // The file first: a crash in between leaves the row `running`, and the next pass settles it again.
    await rm(join(folder, basename(orphan.file_name)), { force: true });
    await store.update(orphan.id, { status: 'failed', error: 'interrupted', completed_at: nowIso() });
  }
  await rm(join(folder, '.work'), { recursive: true, force: true });
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (name.endsWith('.partial') && (await stat(join(folder, name))).isFile()) {
      await rm(join(folder, name), { force: true });
    }
  }
}
