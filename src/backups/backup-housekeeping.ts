import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
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
 * Rows left `running` and work files left behind by a process that died mid-backup. The caller holds the
 * backup lock, so no backup runs anywhere and whatever is still `running` is an orphan.
 */
export async function settleOrphans(store: BackupStore, cfg: PlatformConfig): Promise<void> {
  for (const id of await store.running()) {
    await store.update(id, { status: 'failed', error: 'interrupted', completed_at: nowIso() });
  }
  const folder = backupFolder(cfg);
  await rm(join(folder, '.work'), { recursive: true, force: true });
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (name.endsWith('.partial') && (await stat(join(folder, name))).isFile()) {
      await rm(join(folder, name), { force: true });
    }
  }
}
