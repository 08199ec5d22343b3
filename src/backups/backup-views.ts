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
    // Known once the archive is written; the row is `running` until then.
    sha256: row.status === 'completed' ? row.sha256 : null,
  };
}

/** The task that writes a backup accepted by a create request (its id is the backup id). */
export const taskUrl = (id: string): string => `/api/v1/tasks/${id}`;

/** What every backup answer carries, on both paths (each in its own spelling of the components). */
function backupFields(surface: Surface, row: BackupRow) {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    includes: spell(surface, includesOf(row)),
    download_url: downloadUrl(surface, row.id),
    created_by: row.created_by,
    completed_at: row.completed_at,
    error: row.error,
    ...common(row),
  };
}

/** The core create answer (spec §2.8: `backup_id`, `status: created`), with the same fields as every backup. */
export function coreCreatedView(row: BackupRow) {
  return {
    ...backupFields('core', row),
    backup_id: row.id,
    status: 'created' as const,
    task_url: taskUrl(row.id),
  };
}

export const coreListItem = (row: BackupRow) => backupFields('core', row);

/** `justCreated` reports the create operation's `created` status (spec §2.8); lists show the stored one. */
export function adminBackupView(row: BackupRow, justCreated = false) {
  const fields = backupFields('admin', row);
  return justCreated ? { ...fields, status: 'created', task_url: taskUrl(row.id) } : fields;
}
