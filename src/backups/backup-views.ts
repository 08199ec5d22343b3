import type { Component } from './backup-manifest.js';
import { type BackupRow, includesOf } from './backup-store.js';

export type Surface = 'core' | 'admin';

/** The admin path calls the configuration component `config` (spec §2.8). */
const spell = (surface: Surface, components: readonly Component[]): string[] =>
  components.map((c) => (surface === 'admin' && c === 'configuration' ? 'config' : c));

export const toComponents = (names: readonly string[]): Component[] => [
  ...new Set(names.map((n) => (n === 'config' ? 'configuration' : n) as Component)),
];

export const sizeMb = (bytes: number): number => Math.round((bytes / 1_048_576) * 1000) / 1000;

export const downloadUrl = (surface: Surface, id: string): string =>
  surface === 'admin' ? `/api/v1/admin/backup/${id}/download` : `/api/v1/backup/${id}/download`;

function common(row: BackupRow) {
  const bytes = Number(row.size_bytes);
  return {
    size_mb: sizeMb(bytes),
    size_bytes: bytes,
    created_at: row.created_at,
    type: row.type,
    compression: row.compression === 1,
    encryption: row.encryption === 1,
    sha256: row.sha256,
  };
}

export function coreCreatedView(row: BackupRow) {
  return {
    backup_id: row.id,
    status: 'created' as const,
    name: row.name,
    includes: spell('core', includesOf(row)),
    download_url: downloadUrl('core', row.id),
    ...common(row),
  };
}

export function coreListItem(row: BackupRow) {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    includes: spell('core', includesOf(row)),
    download_url: downloadUrl('core', row.id),
    ...common(row),
  };
}

/** `justCreated` reports the create operation's `created` status (spec §2.8); lists show the stored one. */
export function adminBackupView(row: BackupRow, justCreated = false) {
  return {
    id: row.id,
    name: row.name,
    status: justCreated ? 'created' : row.status,
    includes: spell('admin', includesOf(row)),
    download_url: downloadUrl('admin', row.id),
    created_by: row.created_by,
    completed_at: row.completed_at,
    error: row.error,
    ...common(row),
  };
}
