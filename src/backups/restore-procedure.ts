import type { FastifyBaseLogger } from 'fastify';
import type { AuthService } from '../auth/auth-service.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { ConfigService } from '../config/config-service.js';
import type { Database } from '../storage/database.js';
import type { Maintenance, MaintenanceState } from '../system/maintenance.js';
import type { TaskContext } from '../tasks/task-runner.js';
import { type ApplyReport, applyArchive, type VerifiedArchive } from './backup-restorer.js';
import type { BackupRow } from './backup-store.js';

export interface RestoreProcedureDeps {
  database: Database;
  cfg: () => PlatformConfig;
  maintenance: Maintenance;
  auth: AuthService;
  config: ConfigService;
  log: FastifyBaseLogger;
  writeSafetyBackup: (name: string, encryption: boolean) => Promise<BackupRow>;
}

/**
 * The steps of a `restore` task on an archive already verified: maintenance on, safety backup, the one
 * transaction, plugin files, caches dropped on every instance; maintenance back to what it was, whatever
 * happened. Cancelling works until the database step begins; from then on the transaction decides.
 */
export async function runRestoreProcedure(
  deps: RestoreProcedureDeps,
  task: TaskContext,
  job: { archive: VerifiedArchive; safetyBackup: boolean; actor: string; estimatedMs: number },
): Promise<{ report: ApplyReport; safetyBackupId: string | null }> {
  const { archive } = job;
  const previous = deps.maintenance.current();
  task.step('maintenance', 'running');
  await deps.maintenance.set(
    {
      enabled: true,
      message: `Restoring backup ${archive.backup.id}; the platform is back shortly`,
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
    task.step('plugins', archive.components.includes('plugins') ? 'completed' : 'skipped');
    task.log('info', `restored ${Object.keys(report.tables).length} tables, ${report.config_keys} settings`);
    task.progress(0.95, 'caches');
    await dropCaches(deps, report, archive, job.actor, task);
    task.step('caches', 'completed');
    return { report, safetyBackupId };
  } finally {
    await restoreMaintenance(deps, previous, job.actor);
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
  const input = previous.enabled
    ? {
        enabled: true,
        message: previous.message,
        ...(previous.estimated_duration_minutes === null
          ? {}
          : { estimated_duration_minutes: previous.estimated_duration_minutes }),
        allow_admin_access: previous.allow_admin_access,
      }
    : { enabled: false };
  await deps.maintenance
    .set(input, actor)
    .catch((err: unknown) => deps.log.error({ err }, 'could not restore the maintenance state'));
}
