import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { isSecretKey } from '../config/config-masking.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { schemaAt } from '../config/config-schema.js';
import { isBootOnlyKey } from '../config/config-service.js';
import { AppError } from '../http/app-error.js';
import type { Database } from '../storage/database.js';
import { rejected, sha256File, unpackArchive } from './archive-reader.js';
import { archiveLimits, backupFolder, pluginFolder, pluginFolderAside } from './backup-files.js';
import { CONFIG_FILE, type Component, ConfigExport, type Manifest } from './backup-manifest.js';
import { TABLES_OUTSIDE_DATABASE_COMPONENT } from './backup-scope.js';
import type { BackupRow } from './backup-store.js';
import { describeTables, type LooseDb } from './database-schema.js';
import { appliedMigrations } from './database-snapshot.js';
import { type LoadReport, replaceTables } from './table-load.js';

/** An archive unpacked into a private folder and proven intact and applicable; nothing live touched yet. */
export interface VerifiedArchive {
  backup: BackupRow;
  dir: string;
  manifest: Manifest;
  encrypted: boolean;
  components: Component[];
  config: ConfigExport | undefined;
}

export interface RestoreDeps {
  database: Database;
  cfg: () => PlatformConfig;
}

/** Components a restore can put back; `logs` are exported for inspection and never restored over newer logs. */
const RESTORABLE: readonly Component[] = ['configuration', 'database', 'plugins'];

/**
 * Every check a restore makes before it changes anything: the file is the one the catalogue recorded
 * (size and SHA-256 of the whole file), it unpacks safely within the limits, decrypts, carries our
 * manifest with every checksum matching, belongs to this backup, was taken from a schema this platform
 * knows, and holds the components asked for, with a configuration that passes the current schema.
 */
export async function verifyArchive(
  deps: RestoreDeps,
  backup: BackupRow,
  requested: readonly Component[] | undefined,
  dir: string,
): Promise<VerifiedArchive> {
  const cfg = deps.cfg();
  const file = join(backupFolder(cfg), backup.file_name);
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw rejected('file_missing', `The archive file of backup '${backup.id}' is missing`);
  const whole = await sha256File(file);
  if (whole.sha256 !== backup.sha256 || whole.bytes !== Number(backup.size_bytes)) {
    throw rejected(
      'checksum_mismatch',
      'The archive file is not the one this backup wrote; it was changed or replaced',
    );
  }
  await mkdir(dir, { recursive: true });
  const { manifest, encrypted } = await unpackArchive({
    file,
    dir,
    encryptionKey: cfg.backups.encryption_key,
    limits: archiveLimits(cfg),
  });
  if (encrypted !== (backup.encryption === 1)) {
    throw rejected('encryption_mismatch', 'The archive is not encrypted the way the backup recorded');
  }
  if (manifest.backup_id !== backup.id) {
    throw rejected(
      'manifest_mismatch',
      `The archive belongs to backup '${manifest.backup_id}', not '${backup.id}'`,
    );
  }
  const known = new Set(await appliedMigrations(deps.database.db as unknown as LooseDb));
  const unknown = manifest.schema_version.filter((m) => !known.has(m));
  if (unknown.length > 0) {
    throw rejected('schema_incompatible', 'The backup was taken from a newer schema than this platform has', {
      unknown_migrations: unknown,
    });
  }
  const components = requested?.length
    ? [...new Set(requested)]
    : manifest.includes.filter((c) => c !== 'logs');
  for (const c of components) {
    if (!RESTORABLE.includes(c)) {
      throw new AppError('VALIDATION_ERROR', `'${c}' cannot be restored; logs are kept for inspection only`, {
        details: { field: 'components', reason: `'${c}' is not restorable` },
      });
    }
    if (!manifest.includes.includes(c)) {
      throw new AppError('VALIDATION_ERROR', `The backup does not include '${c}'`, {
        details: { field: 'components', reason: `'${c}' is not in this backup`, includes: manifest.includes },
      });
    }
  }
  if (components.includes('database')) {
    for (const table of Object.keys(manifest.tables)) {
      if (!manifest.files[`database/${table}.jsonl`]) {
        throw rejected('manifest_invalid', `Table '${table}' has no file in the archive`, { entry: table });
      }
    }
  }
  const config = components.includes('configuration') ? await readConfigExport(dir, manifest) : undefined;
  return { backup, dir, manifest, encrypted, components, config };
}

async function readConfigExport(dir: string, manifest: Manifest): Promise<ConfigExport> {
  if (!manifest.files[CONFIG_FILE]) throw rejected('manifest_invalid', `The archive has no ${CONFIG_FILE}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(join(dir, CONFIG_FILE), 'utf8'));
  } catch {
    throw rejected('config_invalid', `${CONFIG_FILE} is not valid JSON`);
  }
  if (!Value.Check(ConfigExport, parsed))
    throw rejected('config_invalid', `${CONFIG_FILE} has the wrong shape`);
  for (const [key, { value }] of Object.entries(parsed.overrides)) {
    const schema = schemaAt(key.split('.'));
    if (!schema || schema.type === 'object' || isBootOnlyKey(key) || isSecretKey(key)) {
      throw rejected('config_invalid', `${CONFIG_FILE} sets '${key}', which cannot be changed at run time`, {
        field: key,
      });
    }
    if (!Value.Check(schema, value)) {
      throw rejected('config_invalid', `${CONFIG_FILE} sets '${key}' to a value the schema refuses`, {
        field: key,
      });
    }
  }
  return parsed;
}

export interface DatabaseReport extends LoadReport {
  /** Users that existed before or after: their cached sessions, keys and records must be dropped. */
  affected_user_ids: string[];
  config_keys: number;
}

/**
 * Puts the verified database and configuration in place, in ONE transaction: a failure anywhere (a bad row, a
 * broken foreign key) rolls back to exactly what was there. Rows are loaded and deleted in bounded batches
 * that let the event loop serve other requests between them. Plugin packages follow after the commit
 * (`swapPluginFiles`).
 */
export async function replaceDatabase(
  deps: RestoreDeps,
  archive: VerifiedArchive,
  options: { onProgress?: (fraction: number) => void },
): Promise<DatabaseReport> {
  const cfg = deps.cfg();
  const { database } = deps;
  const maxLineBytes = cfg.backups.max_entry_bytes;
  return database.db.transaction().execute(async (kysely) => {
    const trx = kysely as unknown as LooseDb;
    const userIds = async () =>
      (await trx.selectFrom('users').select('id').execute()).map((r) => String(r['id']));
    const before = await userIds();
    let load: LoadReport = { tables: {}, ignored_columns: {} };
    if (archive.components.includes('database')) {
      const tables = (await describeTables(trx, database.dialect)).filter(
        (t) => !TABLES_OUTSIDE_DATABASE_COMPONENT.has(t.name),
      );
      load = await replaceTables(trx, database.dialect, tables, archive, {
        maxLineBytes,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
    }
    let configKeys = 0;
    if (archive.config) {
      // Secrets never travel in an archive, so the secrets set at run time here stay as they are.
      const current = await trx.selectFrom('config_overrides').select('key').execute();
      const replaced = current.map((r) => String(r['key'])).filter((k) => !isSecretKey(k));
      if (replaced.length > 0)
        await trx.deleteFrom('config_overrides').where('key', 'in', replaced).execute();
      const rows = Object.entries(archive.config.overrides).map(([key, o]) => ({
        key,
        value: JSON.stringify(o.value),
        updated_at: o.updated_at,
        updated_by: o.updated_by,
      }));
      if (rows.length > 0) await trx.insertInto('config_overrides').values(rows).execute();
      configKeys = rows.length;
    }
    const after = await userIds();
    return { ...load, affected_user_ids: [...new Set([...before, ...after])], config_keys: configKeys };
  });
}

/** Swaps the archive's plugin packages in by renaming folders; answers how many files they hold. */
export async function swapPluginFiles(
  cfg: PlatformConfig,
  archive: VerifiedArchive,
  restoreId: string,
): Promise<number> {
  const live = pluginFolder(cfg);
  const staged = join(archive.dir, 'plugins');
  const previous = pluginFolderAside(cfg, restoreId);
  await rename(live, previous).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  try {
    if ((await stat(staged).catch(() => undefined))?.isDirectory()) await rename(staged, live);
    else await mkdir(live, { recursive: true });
  } catch (err) {
    await rename(previous, live).catch(() => undefined);
    throw err;
  }
  await rm(previous, { recursive: true, force: true });
  return Object.keys(archive.manifest.files).filter((p) => p.startsWith('plugins/')).length;
}
