import { resolve } from 'node:path';
import type { PlatformConfig } from '../config/config-schema.js';
import { folderRefusal } from '../kernel/folder-refusal.js';

/** Where archives live: `<storage.data_dir>/backups/`. Work folders go under `.work/` beside them. */
export const backupFolder = (cfg: PlatformConfig): string => resolve(cfg.storage.data_dir, 'backups');
export const workFolder = (cfg: PlatformConfig, id: string): string =>
  resolve(cfg.storage.data_dir, 'backups', '.work', id);
/** The plugin packages that the `plugins` component carries. */
export const pluginFolder = (cfg: PlatformConfig): string => resolve(cfg.storage.data_dir, 'plugins');
/** Where a restore sets the live plugin folder aside while it swaps the restored one in. */
export const pluginFolderAside = (cfg: PlatformConfig, restoreId: string): string =>
  `${pluginFolder(cfg)}.replaced-${restoreId}`;

/** The unpacking limits of `backups.*` (a restore and an import enforce them while streaming). */
export const archiveLimits = (cfg: PlatformConfig) => ({
  maxEntries: cfg.backups.max_archive_entries,
  maxEntryBytes: cfg.backups.max_entry_bytes,
  maxTotalBytes: cfg.backups.max_unpacked_bytes,
});

export function archiveFileName(id: string, compression: boolean, encryption: boolean): string {
  return `${id}${compression ? '.tar.gz' : '.tar'}${encryption ? '.enc' : ''}`;
}

export function archiveContentType(compression: boolean, encryption: boolean): string {
  if (encryption) return 'application/octet-stream';
  return compression ? 'application/gzip' : 'application/x-tar';
}

/**
 * A backup, restore or import the data folder refused (full, read-only, …) answers 503 with Retry-After, as a
 * database that cannot store a change does, naming the cause for the operator; any other error is unchanged.
 * Whatever the operation had written is already removed by then (no partial archive, no work folder).
 */
export function storageRefusal(err: unknown): unknown {
  return folderRefusal(err, 'backup folder') ?? err;
}
