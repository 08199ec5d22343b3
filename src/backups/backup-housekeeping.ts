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
 * Rows left `running` and work files left behind by a process that died mid-backup. Only when the backup
 * lock is free, so a backup running on another instance is never touched.
 */
export async function settleOrphans(
  store: BackupStore,
  cfg: PlatformConfig,
  tryLock: () => Promise<(() => Promise<void>) | undefined>,
): Promise<void> {
  const release = await tryLock();
  if (!release) return;
  try {
    for (const row of await store.list()) {
      if (row.status === 'running') {
        await store.update(row.id, { status: 'failed', error: 'interrupted', completed_at: nowIso() });
      }
    }
    const folder = backupFolder(cfg);
    await rm(join(folder, '.work'), { recursive: true, force: true });
    for (const name of await readdir(folder).catch(() => [] as string[])) {
      if (name.endsWith('.partial') && (await stat(join(folder, name))).isFile()) {
        await rm(join(folder, name), { force: true });
      }
    }
  } finally {
    await release();
  }
}
