/**
 * Row type of the backup catalogue: one row per archive in `<storage.data_dir>/backups/`.
 * Same representation as every other table (ISO timestamps, JSON as text, booleans as 0/1);
 * `size_bytes` is a bigint because archives may pass 2 GiB.
 */
export interface BackupsTable {
  id: string;
  name: string;
  /** `manual` or `scheduled`. */
  type: string;
  /** `running` while the archive is written, then `completed` or `failed`. */
  status: string;
  /** JSON array of the components in the archive: configuration, database, plugins, logs. */
  includes: string;
  file_name: string;
  size_bytes: number;
  compression: number;
  encryption: number;
  /** SHA-256 of the whole archive file, checked again before every restore and download. */
  sha256: string;
  /** How long writing the archive took, measured; restore estimates are derived from it. */
  duration_ms: number;
  created_at: string;
  completed_at: string | null;
  created_by: string;
  error: string | null;
}

export interface BackupTables {
  backups: BackupsTable;
}
