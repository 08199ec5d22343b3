import type { FastifyBaseLogger } from 'fastify';
import type { AuthService } from '../auth/auth-service.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { ConfigService } from '../config/config-service.js';
import { nowIso } from '../kernel/new-id.js';
import type { Database } from '../storage/database.js';
import type { Maintenance, MaintenanceState } from '../system/maintenance.js';
import type { SystemStateStore } from '../system/system-state-store.js';
import type { TaskContext } from '../tasks/task-runner.js';
import {
  type DatabaseReport,
  replaceDatabase,
  swapPluginFiles,
  type VerifiedArchive,
} from './backup-restorer.js';
import type { BackupRow } from './backup-store.js';
import { clearRestoreMarker, maintenanceInput, writeRestoreMarker } from './restore-marker.js';

export interface RestoreProcedureDeps {
  database: Database;
  cfg: () => PlatformConfig;
  maintenance: Maintenance;
  systemState: SystemStateStore;
  auth: AuthService;
  config: ConfigService;
  log: FastifyBaseLogger;
  /** Writes the safety backup; stops early (throwing) when the signal aborts. */
  writeSafetyBackup: (name: string, encryption: boolean, signal: AbortSignal) => Promise<BackupRow>;
  /** Makes the plugin manager of every instance load what the restored database says. */
  reloadPlugins: () => Promise<void>;
}

export interface RestoreReport extends DatabaseReport {
  plugin_files: number;
  /** What an after-database step could not do (the restored data stays; the step says `failed`). */
  warnings: string[];
}

/** What the steps after the database one share: the restore as it went so far. */
export interface AfterDatabaseContext {
  deps: RestoreProcedureDeps;
  task: TaskContext;
  archive: VerifiedArchive;
  actor: string;
  report: RestoreReport;
}

/**
 * A step that runs once the database step has committed. Every one of them runs, in order, whatever happened
 * to the one before: the data is replaced, so what follows it (plugins, caches, anything derived from the
 * data) must catch up with it. A step that throws is marked `failed` with a warning; the restore still
 * completes. To add one, add it to AFTER_DATABASE (its name becomes a step of the `restore` task).
 */
export interface AfterDatabaseStep {
  name: string;
  run: (ctx: AfterDatabaseContext) => Promise<void>;
}

const AFTER_DATABASE: readonly AfterDatabaseStep[] = [
  {
    // Whatever the components, the plugins' installed state may have changed (it is in the database).
    name: 'plugins',
    run: async ({ deps, task, archive, report }) => {
      if (archive.components.includes('plugins')) {
        report.plugin_files = await swapPluginFiles(deps.cfg(), archive, task.taskId);
      }
      await deps.reloadPlugins();
    },
  },
  {
    // Every instance drops what it cached of users, sessions, keys and configuration.
    name: 'caches',
    run: async ({ deps, task, archive, actor, report }) => {
      if (archive.components.includes('database')) {
        for (const id of report.affected_user_ids) await deps.auth.userChanged(id);
      }
      if (archive.components.includes('configuration')) {
        const change = await deps.config.reload(actor);
        task.log('info', `configuration reloaded; ${change.updated_keys.length} keys changed`);
      }
    },
  },
];

/** The steps of a `restore` task, in order. */
export const RESTORE_STEPS: readonly string[] = [
  'maintenance',
  'safety_backup',
  'database',
  ...AFTER_DATABASE.map((s) => s.name),
];

// Overall progress: the safety backup and the database step take the time.
const SAFETY_FROM = 0.05;
const DATABASE_FROM = 0.3;
const DATABASE_TO = 0.85;

/**
 * The steps of a `restore` task on an archive already verified: maintenance on, safety backup, the one
 * transaction, then every after-database step (plugin files and the plugins loaded as restored, caches
 * dropped on every instance, …); maintenance back to what it was, whatever happened.
 *
 * Cancelling works until the database step begins: the task then becomes uncancellable (a cancel answers 409
 * `not_cancellable`) and always goes on to its last step. Cancelled before, it stops with nothing replaced. A
 * marker row outlives a crash in between, so a start-up puts maintenance back then.
 */
export async function runRestoreProcedure(
  deps: RestoreProcedureDeps,
  task: TaskContext,
  job: { archive: VerifiedArchive; safetyBackup: boolean; actor: string; estimatedMs: number },
): Promise<{ report: RestoreReport; safetyBackupId: string | null }> {
  const { archive } = job;
  const previous = deps.maintenance.current();
  const message = `Restoring backup ${archive.backup.id}; the platform is back shortly`;
  task.step('maintenance', 'running');
  // Written first: a crash right after turning maintenance on must still find it.
  await writeRestoreMarker(deps.systemState, {
    restore_id: task.taskId,
    backup_id: archive.backup.id,
    started_at: nowIso(),
    actor: job.actor,
    message,
    previous,
  });
  await deps.maintenance.set(
    {
      enabled: true,
      message,
      estimated_duration_minutes: Math.max(1, Math.ceil(job.estimatedMs / 60_000)),
      allow_admin_access: true,
    },
    job.actor,
  );
  task.step('maintenance', 'completed');
  try {
    task.signal.throwIfAborted();
    let safetyBackupId: string | null = null;
    if (job.safetyBackup) {
      task.progress(SAFETY_FROM, 'safety_backup');
      // An encrypted archive's data stays encrypted at rest in the backup taken before it is restored.
      const encrypt = archive.encrypted && deps.cfg().backups.encryption_key !== '';
      const safety = await deps.writeSafetyBackup(`before restore ${task.taskId}`, encrypt, task.signal);
      safetyBackupId = safety.id;
      task.setDetails({ safety_backup_id: safety.id });
      task.log('info', `safety backup ${safety.id} written (${safety.size_bytes} bytes)`);
      task.step('safety_backup', 'completed');
    } else {
      task.step('safety_backup', 'skipped', 0);
    }
    // The point of no return: from here a cancel is refused, and every later step runs.
    await task.beginUncancellable();
    task.progress(DATABASE_FROM, 'database');
    // Stored before the transaction begins: on SQLite it holds the one connection until it commits, and the
    // task's progress is written behind it.
    await task.save();
    const database = await replaceDatabase(deps, archive, {
      onProgress: (f) => {
        task.progress(DATABASE_FROM + (DATABASE_TO - DATABASE_FROM) * f);
        task.step('database', 'running', f);
      },
    });
    task.step('database', 'completed');
    task.log(
      'info',
      `restored ${Object.keys(database.tables).length} tables, ${database.config_keys} settings`,
    );
    const report: RestoreReport = { ...database, plugin_files: 0, warnings: [] };
    await runAfterDatabase({ deps, task, archive, actor: job.actor, report });
    return { report, safetyBackupId };
  } finally {
    await restoreMaintenance(deps, previous, job.actor);
  }
}

async function runAfterDatabase(ctx: AfterDatabaseContext): Promise<void> {
  const { task } = ctx;
  for (const [i, step] of AFTER_DATABASE.entries()) {
    task.progress(DATABASE_TO + ((1 - DATABASE_TO) * i) / AFTER_DATABASE.length, step.name);
    try {
      await step.run(ctx);
      task.step(step.name, 'completed');
    } catch (err) {
      // The data is committed; what this step keeps in line with it catches up at the next change or start.
      const warning = `${step.name}: ${(err as Error).message}`;
      ctx.report.warnings.push(warning);
      task.log('warning', `step ${warning}`);
      task.step(step.name, 'failed');
    }
  }
}

async function restoreMaintenance(
  deps: RestoreProcedureDeps,
  previous: MaintenanceState,
  actor: string,
): Promise<void> {
  try {
    await deps.maintenance.set(maintenanceInput(previous), actor);
    await clearRestoreMarker(deps.systemState);
  } catch (err) {
    // The marker stays: the start-up check retries what failed here.
    deps.log.error({ err }, 'could not restore the maintenance state');
  }
}
