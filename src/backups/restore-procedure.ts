import type { FastifyBaseLogger } from 'fastify';
import type { AuthService } from '../auth/auth-service.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { ConfigService } from '../config/config-service.js';
import { nowIso } from '../kernel/new-id.js';
import type { Database } from '../storage/database.js';
import type { Maintenance, MaintenanceState } from '../system/maintenance.js';
import type { SystemStateStore } from '../system/system-state-store.js';
import type { TaskContext } from '../tasks/task-runner.js';
import { type ApplyReport, applyArchive, type VerifiedArchive } from './backup-restorer.js';
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
  writeSafetyBackup: (name: string, encryption: boolean) => Promise<BackupRow>;
  /** Makes the plugin manager of every instance load what the restored database says. */
  reloadPlugins: () => Promise<void>;
}

/**
 * The steps of a `restore` task on an archive already verified: maintenance on, safety backup, the one
 * transaction, plugin files and the plugins loaded as restored, caches dropped on every instance; maintenance
 * back to what it was, whatever happened. Cancelling works until the database step begins; from then on the
 * transaction decides. A marker row outlives a crash in between, so a start-up puts maintenance back then.
 */
export async function runRestoreProcedure(
  deps: RestoreProcedureDeps,
  task: TaskContext,
  job: { archive: VerifiedArchive; safetyBackup: boolean; actor: string; estimatedMs: number },
): Promise<{ report: ApplyReport; safetyBackupId: string | null }> {
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
      task.progress(0.05, 'safety_backup');
      // An encrypted archive's data stays encrypted at rest in the backup taken before it is restored.
      const encrypt = archive.encrypted && deps.cfg().backups.encryption_key !== '';
      const safety = await deps.writeSafetyBackup(`before restore ${task.taskId}`, encrypt);
      safetyBackupId = safety.id;
      task.setDetails({ safety_backup_id: safety.id });
      task.log('info', `safety backup ${safety.id} written (${safety.size_bytes} bytes)`);
      task.step('safety_backup', 'completed');
    } else {
      task.step('safety_backup', 'skipped', 0);
    }
    task.signal.throwIfAborted();
    task.progress(0.3, 'database');
    const report = await applyArchive(deps, archive, {
      restoreId: task.taskId,
      onTable: (_table, done, of) => task.progress(0.3 + (0.6 * done) / of, 'database'),
    });
    task.step('database', 'completed');
    await reloadPlugins(deps, task);
    task.log('info', `restored ${Object.keys(report.tables).length} tables, ${report.config_keys} settings`);
    task.progress(0.95, 'caches');
    await dropCaches(deps, report, archive, job.actor, task);
    task.step('caches', 'completed');
    return { report, safetyBackupId };
  } finally {
    await restoreMaintenance(deps, previous, job.actor);
  }
}

/** Whatever the components, the plugins' installed state may have changed (it is in the database). */
async function reloadPlugins(deps: RestoreProcedureDeps, task: TaskContext): Promise<void> {
  task.progress(0.92, 'plugins');
  try {
    await deps.reloadPlugins();
    task.step('plugins', 'completed');
  } catch (err) {
    // The data is committed; the plugins follow at the next change or start. Not a failed restore.
    task.log('warning', `plugins could not be reloaded: ${(err as Error).message}`);
    task.step('plugins', 'failed');
  }
}

/** Every instance drops what it cached of users, sessions, keys and configuration. */
async function dropCaches(
  deps: RestoreProcedureDeps,
  report: ApplyReport,
  archive: VerifiedArchive,
  actor: string,
  task: TaskContext,
): Promise<void> {
  if (archive.components.includes('database')) {
    for (const id of report.affected_user_ids) await deps.auth.userChanged(id);
  }
  if (archive.components.includes('configuration')) {
    try {
      const change = await deps.config.reload(actor);
      task.log('info', `configuration reloaded; ${change.updated_keys.length} keys changed`);
    } catch (err) {
      task.log('warning', `configuration reload failed: ${(err as Error).message}`);
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
