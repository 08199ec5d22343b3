import { constants } from 'node:fs';
import { access, copyFile, mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { AuditLog } from '../audit/audit-log.js';
import type { AuthService } from '../auth/auth-service.js';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { ConfigService } from '../config/config-service.js';
import { AppError, notFound } from '../http/app-error.js';
import type { MetricFamily } from '../kernel/metric-family.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { EventOrigin, PlatformEvents } from '../kernel/platform-events.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { storableExcerpt } from '../kernel/storable-text.js';
import type { LogStore } from '../logs/log-store.js';
import type { Database } from '../storage/database.js';
import type { Maintenance } from '../system/maintenance.js';
import type { SystemStateStore } from '../system/system-state-store.js';
import type { Scheduler } from '../tasks/scheduler.js';
import type { TaskContext, TaskRunner } from '../tasks/task-runner.js';
import { sha256File, unpackArchive } from './archive-reader.js';
import {
  type BuildDeps,
  type BuildInput,
  type BuildOptions,
  buildBackup,
  insertBackupRow,
  writeBackup,
} from './backup-builder.js';
import {
  archiveContentType,
  archiveFileName,
  archiveLimits,
  backupFolder,
  storageRefusal,
  workFolder,
} from './backup-files.js';
import { deleteBeyondRetention } from './backup-housekeeping.js';
import { BackupLock } from './backup-lock.js';
import { COMPONENTS, type Component } from './backup-manifest.js';
import { BackupRecovery } from './backup-recovery.js';
import { type VerifiedArchive, verifyArchive } from './backup-restorer.js';
import { type BackupRow, BackupStore, type BackupType, includesOf } from './backup-store.js';
import { exportLogStore } from './log-export.js';
import { RESTORE_STEPS, runRestoreProcedure } from './restore-procedure.js';

/** Who asked for an operation, and from where; written to the audit log and carried by the events. */
export interface BackupOrigin {
  userId: string | null;
  username: string;
  /** The request that asked (none for the scheduler's and the CLI's): its audit entry and events carry it. */
  request?: EventOrigin | undefined;
}

export interface CreateBackupInput {
  name?: string | undefined;
  includes: readonly Component[];
  compression: boolean;
  encryption: boolean;
}

export interface RestoreInput {
  components?: readonly Component[] | undefined;
  /** Take a backup of the current state first (default true). */
  safetyBackup: boolean;
}

export interface RestoreStarted {
  restore_id: string;
  status: 'started';
  backup_id: string;
  estimated_duration_ms: number;
  components: Component[];
}

/** A manual backup accepted by `create`, waiting for its task (whose id is the backup id). */
interface PendingBackup {
  row: BackupRow;
  build: BuildInput;
  origin: BackupOrigin;
  release: () => Promise<void>;
}

interface PendingRestore {
  archive: VerifiedArchive;
  input: RestoreInput;
  origin: BackupOrigin;
  release: () => Promise<void>;
  estimatedMs: number;
}

const SCHEDULE_JOB = 'scheduled_backup';
export const FULL: readonly Component[] = ['configuration', 'database', 'plugins'];

/**
 * Backups and restores (`backups` service): writes archives and their catalogue, restores them as `restore`
 * tasks under maintenance mode, runs scheduled backups (`backup` tasks) with retention, and reports measured
 * figures. The HTTP routes and the CLI both go through this one implementation.
 */
export class BackupService implements PlatformService {
  readonly name = 'backups';
  readonly type = 'storage';
  readonly dependencies = ['database', 'task_runner', 'scheduler'] as const;
  private readonly store: BackupStore;
  private readonly pending = new Map<string, PendingRestore>();
  private readonly pendingBackups = new Map<string, PendingBackup>();
  private unsubscribeConfig: (() => void) | undefined;
  private readonly lock: BackupLock;
  private readonly recovery: BackupRecovery;
  private readonly counts = {
    created: 0,
    failed: 0,
    restored: 0,
    restoreFailed: 0,
    deletedByRetention: 0,
    lastBytes: 0,
    lastDurationMs: 0,
    lastRestoreMs: 0,
  };
  private lastScheduledError: string | undefined;
  /** True while `lastScheduledError` is the scheduler refusing backups.schedule, not a failed run. */
  private scheduleUnreadable = false;

  constructor(
    private readonly deps: {
      database: Database;
      cfg: () => PlatformConfig;
      config: ConfigService;
      auth: AuthService;
      maintenance: Maintenance;
      systemState: SystemStateStore;
      shared: SharedState;
      audit: AuditLog;
      events: PlatformEvents;
      tasks: TaskRunner;
      scheduler: Scheduler | undefined;
      logs: Pick<LogStore, 'exportPage'> | undefined;
      log: FastifyBaseLogger;
      /** Makes every instance's plugin manager load what a restored database says. */
      reloadPlugins: () => Promise<void>;
    },
  ) {
    this.store = new BackupStore(deps.database.db);
    this.lock = new BackupLock(deps);
    this.recovery = new BackupRecovery({ ...deps, store: this.store, acquire: () => this.lock.tryAcquire() });
  }

  // --- operations ---

  /**
   * Accepts a manual backup and answers at once with its row (`running`): the archive is written by a `backup`
   * task whose id is the backup id, and the row moves to `completed` or `failed` when it ends. The lock taken
   * here is held by the task until then.
   */
  async create(input: CreateBackupInput, origin: BackupOrigin): Promise<BackupRow> {
    this.assertEncryptable(input.encryption);
    const release = await this.lock.acquire();
    let row: BackupRow | undefined;
    try {
      const build = this.buildInput({ ...input, type: 'manual' }, origin.username);
      row = await insertBackupRow(this.buildDeps(), build);
      this.pendingBackups.set(row.id, { row, build, origin, release });
      await this.deps.tasks.start(
        'backup',
        { backup_id: row.id, name: row.name, includes: build.includes, trigger: 'manual' },
        { id: row.id, actor: actorOf(origin) },
      );
      return row;
    } catch (err) {
      if (row) {
        this.pendingBackups.delete(row.id);
        await this.store
          .update(row.id, { status: 'failed', error: (err as Error).message, completed_at: nowIso() })
          .catch(() => undefined);
      }
      await release();
      throw storageRefusal(err);
    }
  }

  /** Waits for a backup task started here to end (the CLI and the tests use it); the row as it ended. */
  async backupSettled(id: string): Promise<BackupRow> {
    await this.deps.tasks.settled(id);
    return this.get(id);
  }

  list(): Promise<BackupRow[]> {
    return this.store.list();
  }

  async get(id: string): Promise<BackupRow> {
    const row = await this.store.findById(id);
    if (!row) throw notFound('backup', id);
    return row;
  }

  /** The archive file to send, after checking it is still the one the backup wrote. */
  async download(id: string): Promise<{ file: string; bytes: number; contentType: string; row: BackupRow }> {
    const row = await this.completed(id);
    const file = join(backupFolder(this.deps.cfg()), row.file_name);
    const actual = await sha256File(file).catch(() => undefined);
    if (!actual) throw notFound('backup file', id);
    if (actual.sha256 !== row.sha256 || actual.bytes !== Number(row.size_bytes)) {
      throw new AppError('BACKUP_INVALID', 'The archive file was changed or replaced since it was written', {
        details: { reason: 'checksum_mismatch', backup_id: id },
      });
    }
    return {
      file,
      bytes: actual.bytes,
      contentType: archiveContentType(row.compression === 1, row.encryption === 1),
      row,
    };
  }

  /**
   * Verifies the archive completely (nothing live is touched), then starts the `restore` task and answers.
   * The lock taken here is held by the task until it ends.
   */
  async startRestore(id: string, input: RestoreInput, origin: BackupOrigin): Promise<RestoreStarted> {
    const backup = await this.completed(id);
    const release = await this.lock.acquire();
    const restoreId = newId('rst');
    const dir = workFolder(this.deps.cfg(), restoreId);
    let components: Component[];
    let estimatedMs: number;
    try {
      const archive = await verifyArchive(this.deps, backup, input.components, dir);
      components = archive.components;
      // Measured figures only: loading takes about as long as dumping did, plus a safety backup of today's size.
      const latest = await this.store.latestCompleted();
      estimatedMs = Number(backup.duration_ms) + (input.safetyBackup ? Number(latest?.duration_ms ?? 0) : 0);
      this.pending.set(restoreId, { archive, input, origin, release, estimatedMs });
      await this.deps.tasks.start(
        'restore',
        {
          restore_id: restoreId,
          backup_id: id,
          components,
          create_backup_before_restore: input.safetyBackup,
        },
        { id: restoreId, actor: actorOf(origin) },
      );
    } catch (err) {
      this.pending.delete(restoreId);
      await rm(dir, { recursive: true, force: true });
      await release();
      throw storageRefusal(err);
    }
    await this.audit(origin, 'backup.restore', id, {
      restore_id: restoreId,
      components,
      create_backup_before_restore: input.safetyBackup,
      status: 'started',
    });
    return {
      restore_id: restoreId,
      status: 'started',
      backup_id: id,
      estimated_duration_ms: estimatedMs,
      components,
    };
  }

  /**
   * Adds an archive written elsewhere (another installation, another dialect) to the catalogue, after the
   * same verification a restore makes. It keeps its backup id; an id already known is a conflict.
   */
  async importArchive(source: string, origin: BackupOrigin): Promise<BackupRow> {
    const release = await this.lock.acquire();
    const cfg = this.deps.cfg();
    const work = workFolder(cfg, newId('imp'));
    const started = performance.now();
    try {
      await mkdir(work, { recursive: true });
      const { manifest, encrypted } = await unpackArchive({
        file: source,
        dir: work,
        encryptionKey: cfg.backups.encryption_key,
        limits: archiveLimits(cfg),
      });
      const known = await this.store.findById(manifest.backup_id);
      // A failed row (an import or backup interrupted before it completed) has no file: importing again replaces it.
      if (known && known.status !== 'failed') {
        throw new AppError(
          'RESOURCE_CONFLICT',
          `Backup '${manifest.backup_id}' is already in the catalogue`,
          {
            details: { backup_id: manifest.backup_id },
          },
        );
      }
      if (known) await this.store.delete(known.id);
      const fileName = archiveFileName(manifest.backup_id, manifest.compression, encrypted);
      await mkdir(backupFolder(cfg), { recursive: true });
      const target = join(backupFolder(cfg), fileName);
      // The row comes first, `running`: a process that dies before it says `completed` leaves a row the
      // recovery settles (file removed), never an archive file that no row names.
      const row: BackupRow = {
        id: manifest.backup_id,
        name: manifest.name,
        type: 'manual',
        status: 'running',
        includes: JSON.stringify(manifest.includes),
        file_name: fileName,
        size_bytes: 0,
        compression: manifest.compression ? 1 : 0,
        encryption: encrypted ? 1 : 0,
        sha256: '',
        duration_ms: 0,
        created_at: manifest.created_at,
        completed_at: null,
        created_by: origin.username,
        error: null,
      };
      await this.store.insert(row);
      try {
        await copyFile(source, `${target}.partial`);
        await rename(`${target}.partial`, target);
        const written = await sha256File(target);
        const done = {
          status: 'completed',
          size_bytes: written.bytes,
          sha256: written.sha256,
          // Not the original dump time (unknown here) but the measured time to read the whole archive.
          duration_ms: Math.round(performance.now() - started),
          completed_at: nowIso(),
        };
        await this.store.update(row.id, done);
        Object.assign(row, done);
      } catch (err) {
        // A failed import leaves nothing behind: neither the file nor its row.
        await rm(`${target}.partial`, { force: true });
        if (resolve(source) !== target) await rm(target, { force: true });
        await this.store.delete(row.id).catch(() => undefined);
        throw err;
      }
      await this.audit(origin, 'backup.import', row.id, {
        source_dialect: manifest.dialect,
        includes: manifest.includes,
      });
      return row;
    } finally {
      await rm(work, { recursive: true, force: true });
      await release();
    }
  }

  /** Waits for a restore task started here to end (the CLI uses it). */
  async restoreSettled(restoreId: string): Promise<{ status: string; error: string | null }> {
    const task = await this.deps.tasks.settled(restoreId);
    return { status: task?.status ?? 'unknown', error: task?.error ?? null };
  }

  // --- the service lifecycle ---

  async start(): Promise<void> {
    this.deps.tasks.registerType('restore', (task) => this.runRestoreTask(task), { steps: RESTORE_STEPS });
    // One type for every backup: a manual one names its backup (the task id is the backup id).
    this.deps.tasks.registerType('backup', (task) => {
      const id = task.details['backup_id'];
      return typeof id === 'string' ? this.runManualBackupTask(task, id) : this.runScheduledTask(task);
    });
    await this.recovery.start();
    this.applySchedule();
    this.unsubscribeConfig = this.deps.config.onChange((keys) => {
      if (keys.includes('backups.schedule')) this.applySchedule();
    });
  }

  async stop(): Promise<void> {
    this.recovery.stop();
    this.unsubscribeConfig?.();
    this.deps.scheduler?.unschedule(SCHEDULE_JOB);
  }

  async health(): Promise<ServiceHealth> {
    const folder = backupFolder(this.deps.cfg());
    const started = performance.now();
    let writable = true;
    try {
      await mkdir(folder, { recursive: true });
      await access(folder, constants.W_OK);
    } catch {
      writable = false;
    }
    const latest = await this.store.latestCompleted();
    const checks = [
      {
        name: 'backup_folder',
        status: writable ? ('pass' as const) : ('fail' as const),
        response_time_ms: Math.round((performance.now() - started) * 100) / 100,
      },
      {
        name: 'scheduled_backups',
        status: this.lastScheduledError ? ('warning' as const) : ('pass' as const),
        schedule: this.deps.cfg().backups.schedule || null,
        ...(this.lastScheduledError ? { error: this.lastScheduledError } : {}),
      },
    ];
    return {
      status: !writable ? 'unhealthy' : this.lastScheduledError ? 'warning' : 'healthy',
      checks,
      // The folder stays out: an absolute server path tells a caller nothing it needs.
      details: { last_backup_at: latest?.created_at ?? null },
    };
  }

  metrics(): Record<string, number> {
    const c = this.counts;
    const attempts = c.created + c.failed + c.restored + c.restoreFailed;
    return {
      requests_handled: attempts,
      backups_created: c.created,
      backups_failed: c.failed,
      restores_completed: c.restored,
      restores_failed: c.restoreFailed,
      deleted_by_retention: c.deletedByRetention,
      last_backup_bytes: c.lastBytes,
      last_backup_duration_ms: c.lastDurationMs,
      last_restore_duration_ms: c.lastRestoreMs,
      error_rate:
        attempts === 0 ? 0 : Math.round(((c.failed + c.restoreFailed) / attempts) * 10_000) / 10_000,
    };
  }

  /**
   * The newest completed backup's time, read from the catalogue at each scrape: a health check answers from
   * the registry's cache for a second (and one begun before the row read `completed` is shared), so the gauge
   * taken from it read 0 right after a first backup ended.
   */
  async prometheus(): Promise<MetricFamily[]> {
    let latest: BackupRow | undefined;
    try {
      latest = await this.store.latestCompleted();
    } catch (err) {
      // The database unreachable must not cost the scrape every other family (its health says why): the gauge
      // is left out of this one rather than reading 0, "never".
      this.deps.log.warn({ err }, 'could not read the last completed backup for /metrics');
      return [];
    }
    return [
      {
        name: 'platform_backup_last_success_timestamp_seconds',
        help: 'When the newest completed backup was made (Unix time; 0: never)',
        type: 'gauge',
        samples: [{ value: latest ? Date.parse(latest.created_at) / 1000 : 0 }],
      },
    ];
  }

  settings(): Record<string, unknown> {
    const b = this.deps.cfg().backups;
    return {
      folder: backupFolder(this.deps.cfg()),
      schedule: b.schedule || null,
      retention_count: b.retention_count,
      encryption_key_set: b.encryption_key !== '',
      max_archive_entries: b.max_archive_entries,
      max_entry_bytes: b.max_entry_bytes,
      max_unpacked_bytes: b.max_unpacked_bytes,
      lock_lease_seconds: b.lock_lease_seconds,
    };
  }

  // --- internals ---

  private assertEncryptable(encryption: boolean): void {
    if (encryption && !this.deps.cfg().backups.encryption_key) {
      throw new AppError('BACKUP_KEY_REQUIRED', undefined, {
        details: { field: 'encryption', reason: 'backups.encryption_key is not configured' },
      });
    }
  }

  private async completed(id: string): Promise<BackupRow> {
    const row = await this.get(id);
    if (row.status !== 'completed') {
      throw new AppError('RESOURCE_CONFLICT', `Backup '${id}' is ${row.status}, not completed`, {
        details: { backup_id: id, status: row.status },
      });
    }
    return row;
  }

  private buildDeps(): BuildDeps {
    const { logs } = this.deps;
    return {
      database: this.deps.database,
      cfg: this.deps.cfg,
      store: this.store,
      configMetadata: () => this.deps.config.metadata(),
      exportLogs: logs ? (file) => exportLogStore(logs, file) : undefined,
    };
  }

  private buildInput(input: CreateBackupInput & { type: BackupType }, createdBy: string): BuildInput {
    return {
      id: newId('bkp'),
      name: input.name?.trim() || `${input.type} backup ${nowIso()}`,
      type: input.type,
      // One order everywhere (manifest, catalogue, responses), whatever order they were asked in.
      includes: COMPONENTS.filter((c) => input.includes.includes(c)),
      compression: input.compression,
      encryption: input.encryption,
      createdBy,
    };
  }

  /** Writes a backup now (a scheduled one, a restore's safety backup): the row and the archive. */
  private async build(
    input: CreateBackupInput & { type: BackupType },
    createdBy: string,
    options: BuildOptions = {},
  ): Promise<BackupRow> {
    const build = this.buildInput(input, createdBy);
    return this.written(build.id, () => buildBackup(this.buildDeps(), build, options));
  }

  /** Counts a backup's outcome; a failure is logged and thrown as the refusal it is (a full disk: 503). */
  private async written(id: string, write: () => Promise<BackupRow>): Promise<BackupRow> {
    try {
      const row = await write();
      this.counts.created += 1;
      this.counts.lastBytes = Number(row.size_bytes);
      this.counts.lastDurationMs = Number(row.duration_ms);
      return row;
    } catch (err) {
      this.counts.failed += 1;
      this.deps.log.error({ err, backup_id: id }, 'backup failed');
      throw storageRefusal(err);
    }
  }

  /** The `backup` task of a manual backup: writes the archive `create` accepted, then audits and announces it. */
  private async runManualBackupTask(task: TaskContext, id: string): Promise<Record<string, unknown>> {
    const pending = this.pendingBackups.get(id);
    this.pendingBackups.delete(id);
    if (!pending) throw new Error('this backup was accepted by an instance that no longer runs it');
    const { row: accepted, build, origin } = pending;
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await pending.release().catch(() => undefined);
    };
    try {
      const row = await this.written(id, () =>
        writeBackup(this.buildDeps(), accepted, build, {
          signal: task.signal,
          onProgress: (fraction, stage) => task.progress(fraction, stage),
        }),
      );
      // The record reads `completed` now: a restore of it asked for at once must not find the lock still held.
      await release();
      await this.recordCreated(row, origin);
      return { backup_id: row.id, size_bytes: Number(row.size_bytes), sha256: row.sha256 };
    } catch (err) {
      await this.auditBackupFailure(origin, id, task, err);
      throw err;
    } finally {
      await release();
    }
  }

  private async auditBackupFailure(origin: BackupOrigin, id: string, task: TaskContext, err: unknown) {
    const message = err instanceof Error ? err.message || err.name : String(err);
    await this.audit(origin, 'backup.create', id, {
      backup_id: id,
      status: task.signal.aborted ? 'cancelled' : 'failed',
      error: storableExcerpt(message, 2000),
    }).catch((auditErr: unknown) =>
      this.deps.log.error({ err: auditErr, backup_id: id }, 'could not audit the failed backup'),
    );
  }

  private async recordCreated(row: BackupRow, origin: BackupOrigin): Promise<void> {
    const data = {
      backup_id: row.id,
      name: row.name,
      type: row.type,
      includes: includesOf(row),
      size_bytes: Number(row.size_bytes),
      compression: row.compression === 1,
      encryption: row.encryption === 1,
    };
    await this.audit(origin, 'backup.create', row.id, data);
    this.deps.events.announce('backup.created', 'system', data, {
      actor: actorOf(origin),
      origin: origin.request,
    });
  }

  private async audit(
    origin: BackupOrigin,
    action: string,
    backupId: string,
    details: Record<string, unknown>,
  ) {
    await this.deps.audit.write({
      action,
      resourceType: 'backup',
      resourceId: backupId,
      details,
      actorId: origin.userId,
      adminUser: origin.username,
      ...(origin.request?.ipAddress ? { ipAddress: origin.request.ipAddress } : {}),
      ...(origin.request?.userAgent ? { userAgent: origin.request.userAgent } : {}),
    });
  }

  private async runRestoreTask(task: TaskContext): Promise<Record<string, unknown>> {
    const pending = this.pending.get(task.taskId);
    this.pending.delete(task.taskId);
    if (!pending) throw new Error('the verified archive of this restore is no longer available');
    const started = performance.now();
    try {
      const result = await this.restore(task, pending);
      this.counts.restored += 1;
      this.counts.lastRestoreMs = Math.round(performance.now() - started);
      return { ...result, duration_ms: this.counts.lastRestoreMs };
    } catch (err) {
      this.counts.restoreFailed += 1;
      await this.auditRestoreFailure(task, pending, err);
      throw err;
    } finally {
      await rm(pending.archive.dir, { recursive: true, force: true }).catch(() => undefined);
      await pending.release().catch(() => undefined);
    }
  }

  /** The outcome of a restore that did not complete, audited as a completed one is (`backup.restore`). */
  private async auditRestoreFailure(task: TaskContext, p: PendingRestore, err: unknown): Promise<void> {
    const cancelled = task.signal.aborted;
    const message = err instanceof Error ? err.message || err.name : String(err);
    try {
      await this.audit(p.origin, 'backup.restore', p.archive.backup.id, {
        restore_id: task.taskId,
        backup_id: p.archive.backup.id,
        components: p.archive.components,
        safety_backup_id: (task.details['safety_backup_id'] as string | undefined) ?? null,
        status: cancelled ? 'cancelled' : 'failed',
        error: storableExcerpt(message, 2000),
      });
    } catch (auditErr) {
      // The restore's own failure is what the task reports; a failing audit write is logged beside it.
      this.deps.log.error({ err: auditErr, restore_id: task.taskId }, 'could not audit the failed restore');
    }
  }

  private async restore(task: TaskContext, p: PendingRestore): Promise<Record<string, unknown>> {
    const { archive, origin } = p;
    const { report, safetyBackupId } = await runRestoreProcedure(
      {
        ...this.deps,
        writeSafetyBackup: (name, encryption, signal) =>
          this.build(
            { name, type: 'manual', includes: FULL, compression: true, encryption },
            origin.username,
            { signal },
          ),
      },
      task,
      { archive, safetyBackup: p.input.safetyBackup, actor: origin.username, estimatedMs: p.estimatedMs },
    );
    const summary = {
      restore_id: task.taskId,
      backup_id: archive.backup.id,
      components: archive.components,
      safety_backup_id: safetyBackupId,
      source_dialect: archive.manifest.dialect,
    };
    // The audit log was just replaced by the backup's; this restore is recorded in the restored history.
    await this.audit(origin, 'backup.restore', archive.backup.id, { ...summary, status: 'completed' });
    this.deps.events.announce('backup.restored', 'system', summary, {
      actor: actorOf(origin),
      origin: origin.request,
    });
    return {
      ...summary,
      tables: report.tables,
      ignored_columns: report.ignored_columns,
      config_keys: report.config_keys,
      plugin_files: report.plugin_files,
      warnings: report.warnings,
    };
  }

  private applySchedule(): void {
    const { scheduler } = this.deps;
    if (!scheduler) return;
    scheduler.unschedule(SCHEDULE_JOB);
    const cron = this.deps.cfg().backups.schedule.trim();
    // Without a schedule there are no scheduled backups to warn about (a failed last run stays reported only
    // while backups are still scheduled), and a cron the scheduler could not read is replaced by this one.
    if (!cron || this.scheduleUnreadable) this.lastScheduledError = undefined;
    this.scheduleUnreadable = false;
    if (!cron) return;
    try {
      scheduler.schedule(
        SCHEDULE_JOB,
        cron,
        async ({ occurrence }) => {
          const task = await this.deps.tasks.start('backup', { scheduled_for: occurrence.toISOString() });
          const done = await this.deps.tasks.settled(task.id);
          if (done?.status === 'failed') throw new Error(`scheduled backup task ${task.id} failed`);
        },
        { description: 'Scheduled backup (backups.schedule), keeping backups.retention_count' },
      );
    } catch (err) {
      this.lastScheduledError = (err as Error).message;
      this.scheduleUnreadable = true;
      this.deps.log.error({ err }, 'backups.schedule is not a valid cron expression');
    }
  }

  private async runScheduledTask(task: TaskContext): Promise<Record<string, unknown>> {
    const origin: BackupOrigin = { userId: null, username: 'system' };
    try {
      const release = await this.lock.acquire();
      let row: BackupRow;
      const deleted: string[] = [];
      try {
        task.progress(0.1, 'backup');
        row = await this.build(
          {
            type: 'scheduled',
            includes: FULL,
            compression: true,
            encryption: this.deps.cfg().backups.encryption_key !== '',
          },
          origin.username,
          { signal: task.signal, onProgress: (f) => task.progress(0.1 + 0.8 * f, 'backup') },
        );
        task.progress(0.9, 'retention');
        deleted.push(...(await deleteBeyondRetention(this.store, this.deps.cfg())));
        this.counts.deletedByRetention += deleted.length;
      } finally {
        await release();
      }
      if (deleted.length > 0) task.log('info', `retention deleted ${deleted.join(', ')}`);
      await this.recordCreated(row, origin);
      this.lastScheduledError = undefined;
      return { backup_id: row.id, size_bytes: Number(row.size_bytes), deleted_backups: deleted };
    } catch (err) {
      // A run that ends after the schedule was removed has no schedule left to warn about.
      if (this.deps.cfg().backups.schedule.trim()) this.lastScheduledError = (err as Error).message;
      throw err;
    }
  }
}

const actorOf = (origin: BackupOrigin) =>
  origin.userId ? { id: origin.userId, username: origin.username } : undefined;
