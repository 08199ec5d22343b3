import { type Dirent, existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isSecretKey } from '../config/config-masking.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { ConfigMetadata } from '../config/config-service.js';
import { nowIso } from '../kernel/new-id.js';
import type { Database } from '../storage/database.js';
import { PLATFORM_VERSION } from '../system/platform-info.js';
import { sha256File } from './archive-reader.js';
import { writeArchive } from './archive-writer.js';
import { archiveFileName, backupFolder, pluginFolder, workFolder } from './backup-files.js';
import {
  BACKUP_FORMAT,
  CONFIG_FILE,
  type Component,
  type ConfigExport,
  type Manifest,
} from './backup-manifest.js';
import type { BackupRow, BackupStore, BackupType } from './backup-store.js';
import { snapshotSource, withSnapshot } from './database-snapshot.js';
import { dumpInWorker } from './dump-in-worker.js';
import {
  dumpSnapshot,
  type SnapshotDump,
  type SnapshotDumpOptions,
  type SnapshotWants,
} from './snapshot-dump.js';

export interface BuildInput {
  id: string;
  name: string;
  type: BackupType;
  includes: readonly Component[];
  compression: boolean;
  encryption: boolean;
  createdBy: string;
}

export interface BuildDeps {
  database: Database;
  cfg: () => PlatformConfig;
  store: BackupStore;
  configMetadata: () => ConfigMetadata;
  /** Writes the log store as JSON Lines into the file; undefined when this platform has no log store. */
  exportLogs: ((file: string) => Promise<{ rows: number }>) | undefined;
}

export interface BuildOptions {
  /** Aborting it stops the build at its next page or file; the row ends `failed` with `cancelled` or `interrupted`. */
  signal?: AbortSignal | undefined;
  /** Progress 0..1 and the stage (`database`, `configuration`, `plugins`, `logs`, `archive`). */
  onProgress?: ((fraction: number, stage: string) => void) | undefined;
}

/**
 * Writes one archive and its catalogue row. The row is `running` while the archive is written and ends
 * `completed` (with size, checksum and measured duration) or `failed` (with the error); a failed archive
 * leaves no file behind.
 */
export async function buildBackup(
  deps: BuildDeps,
  input: BuildInput,
  options: BuildOptions = {},
): Promise<BackupRow> {
  const row = await insertBackupRow(deps, input);
  return writeBackup(deps, row, input, options);
}

/** The catalogue row of a backup about to be written, stored as `running`. */
export async function insertBackupRow(deps: BuildDeps, input: BuildInput): Promise<BackupRow> {
  const cfg = deps.cfg();
  const fileName = archiveFileName(input.id, input.compression, input.encryption);
  const row: BackupRow = {
    id: input.id,
    name: input.name,
    type: input.type,
    status: 'running',
    includes: JSON.stringify(input.includes),
    file_name: fileName,
    size_bytes: 0,
    compression: input.compression ? 1 : 0,
    encryption: input.encryption ? 1 : 0,
    sha256: '',
    duration_ms: 0,
    created_at: nowIso(),
    completed_at: null,
    created_by: input.createdBy,
    error: null,
  };
  await mkdir(backupFolder(cfg), { recursive: true });
  await deps.store.insert(row);
  return row;
}

/**
 * Writes the archive of a row `insertBackupRow` stored, and moves the row to `completed` or `failed`. Every
 * stage is streamed: tables in pages (table-dump, in a worker thread), files copied, the archive packed from the
 * staged files.
 */
export async function writeBackup(
  deps: BuildDeps,
  row: BackupRow,
  input: BuildInput,
  options: BuildOptions = {},
): Promise<BackupRow> {
  const cfg = deps.cfg();
  const started = performance.now();
  const { signal } = options;
  const progress = options.onProgress ?? (() => undefined);
  const fileName = row.file_name;
  const work = workFolder(cfg, input.id);
  const content = join(work, 'content');
  try {
    await mkdir(content, { recursive: true });
    const manifest: Manifest = {
      format: BACKUP_FORMAT,
      backup_id: input.id,
      name: row.name,
      compression: input.compression,
      platform_version: PLATFORM_VERSION,
      schema_version: [],
      dialect: deps.database.dialect,
      includes: [...input.includes],
      skipped: {},
      created_at: row.created_at,
      tables: {},
      files: {},
    };
    // Tables and configuration from one snapshot, read in a worker thread (but for an in-memory SQLite).
    const wants = {
      database: input.includes.includes('database'),
      configuration: input.includes.includes('configuration'),
    };
    if (wants.database) progress(0, 'database');
    const snapshot = await readSnapshot(deps.database, work, content, wants, {
      signal,
      onRows: (rows, estimate) => progress(DUMP_SHARE * Math.min(1, rows / estimate), 'database'),
    });
    manifest.schema_version = snapshot.schemaVersion;
    for (const [name, t] of Object.entries(snapshot.tables ?? {})) {
      manifest.tables[name] = { rows: t.rows, columns: t.columns };
      manifest.files[t.file.path] = { sha256: t.file.sha256, bytes: t.file.bytes };
    }
    if (snapshot.configOverrides) {
      progress(DUMP_SHARE, 'configuration');
      await stageConfiguration(snapshot.configOverrides, deps.configMetadata(), content, manifest);
    }
    signal?.throwIfAborted();
    if (input.includes.includes('plugins')) {
      progress(DUMP_SHARE, 'plugins');
      await stagePlugins(pluginFolder(cfg), content, manifest);
    }
    signal?.throwIfAborted();
    if (input.includes.includes('logs')) {
      progress(DUMP_SHARE, 'logs');
      await stageLogs(deps.exportLogs, content, manifest);
    }
    signal?.throwIfAborted();
    progress(ARCHIVE_FROM, 'archive');
    const folders = ['database', 'config', 'plugins', 'logs'].filter((f) =>
      Object.keys(manifest.files).some((p) => p.startsWith(`${f}/`)),
    );
    const written = await writeArchive({
      stagingDir: content,
      manifest,
      folders,
      file: join(backupFolder(cfg), fileName),
      compression: input.compression,
      encryptionKey: input.encryption ? cfg.backups.encryption_key : undefined,
      signal,
    });
    progress(1, 'archive');
    const done = {
      status: 'completed',
      size_bytes: written.bytes,
      sha256: written.sha256,
      duration_ms: Math.round(performance.now() - started),
      completed_at: nowIso(),
    };
    await deps.store.update(input.id, done);
    return { ...row, ...done };
  } catch (err) {
    // A task's signal says why it stopped: cancelled, or the platform stopping under it.
    const error = signal?.aborted
      ? /cancel/.test(String((signal.reason as Error | undefined)?.message))
        ? 'cancelled'
        : 'interrupted'
      : (removedFolderError(err, content) ?? (err instanceof Error ? err.message : String(err)));
    // The archive may have its final name already (the failure came after, e.g. the row could not be updated).
    // A folder that is gone or replaced by a file has no archive to remove: the row must end `failed` all the same.
    await rm(join(backupFolder(cfg), fileName), { force: true }).catch(() => undefined);
    await deps.store
      .update(input.id, { status: 'failed', error, completed_at: nowIso() })
      .catch(() => undefined);
    throw err;
  } finally {
    await rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * The error of a backup whose staged files were taken away under it (the backup folder removed, or replaced by a
 * file, while it was written), named as such; undefined for any other error.
 */
function removedFolderError(err: unknown, content: string): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if ((code !== 'ENOENT' && code !== 'ENOTDIR') || existsSync(content)) return undefined;
  return `the backup folder was removed while the backup was written (${(err as Error).message})`;
}

// Shares of the overall progress: dumping the tables, then packing the archive.
const DUMP_SHARE = 0.7;
const ARCHIVE_FROM = 0.75;

/**
 * The database part of a backup from one snapshot (snapshot-dump): in a worker thread with a connection of its
 * own (dump-in-worker) to the SQLite file or the PostgreSQL server, so the reads, the rows' encoding and
 * hashing and their garbage stay off the event loop and the platform's heap (on this thread after all if a
 * page outgrows the worker's heap); for an in-memory SQLite (no file a second connection could open) on this
 * thread.
 */
async function readSnapshot(
  database: Database,
  work: string,
  content: string,
  wants: SnapshotWants,
  options: SnapshotDumpOptions,
): Promise<SnapshotDump> {
  const source = await snapshotSource(database);
  if (source) {
    try {
      return await dumpInWorker(source, content, wants, options);
    } catch (err) {
      // A page of rows too large for the worker's heap (500 events near the payload limit): dumped on this
      // thread as before the worker, rather than not at all. Its files are written anew.
      if ((err as NodeJS.ErrnoException).code !== 'ERR_WORKER_OUT_OF_MEMORY' || options.signal?.aborted) {
        throw err;
      }
    }
  }
  return withSnapshot(database, work, (db) => dumpSnapshot(db, database.dialect, content, wants, options));
}

/** The runtime changes stored in the database, without secrets: an archive must never carry credentials. */
async function stageConfiguration(
  rows: readonly Record<string, unknown>[],
  metadata: ConfigMetadata,
  content: string,
  manifest: Manifest,
) {
  const overrides: ConfigExport['overrides'] = {};
  for (const r of rows) {
    const key = String(r['key']);
    if (isSecretKey(key)) continue;
    overrides[key] = {
      value: JSON.parse(String(r['value'])) as unknown,
      updated_at: String(r['updated_at']),
      updated_by: String(r['updated_by']),
    };
  }
  const body: ConfigExport = { overrides, metadata };
  const file = join(content, CONFIG_FILE);
  await mkdir(join(content, 'config'), { recursive: true });
  await writeFile(file, `${JSON.stringify(body, null, 2)}\n`);
  manifest.files[CONFIG_FILE] = await sha256File(file);
}

/** Copies the plugin packages; only plain files and folders (a link could point anywhere on this machine). */
async function stagePlugins(source: string, content: string, manifest: Manifest) {
  const copy = async (relative: string) => {
    let entries: Dirent[];
    try {
      entries = await readdir(join(source, relative), { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && relative === '') return;
      throw err;
    }
    for (const entry of entries) {
      if (entry.name.includes('\\')) continue;
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        await copy(path);
      } else if (entry.isFile()) {
        const target = join(content, 'plugins', path);
        await mkdir(join(target, '..'), { recursive: true });
        await copyFile(join(source, path), target);
        manifest.files[`plugins/${path}`] = await sha256File(target);
      }
    }
  };
  await copy('');
}

async function stageLogs(exportLogs: BuildDeps['exportLogs'], content: string, manifest: Manifest) {
  if (!exportLogs) {
    manifest.skipped['logs'] = 'this platform has no log store to export';
    return;
  }
  const path = 'logs/log_entries.jsonl';
  const file = join(content, path);
  await mkdir(join(content, 'logs'), { recursive: true });
  await exportLogs(file);
  manifest.files[path] = await sha256File(file);
}
