import { resolve } from 'node:path';
import type { PlatformConfig } from '../config/config-schema.js';

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
