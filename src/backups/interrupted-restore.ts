import { rename, rm, stat } from 'node:fs/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { AuditLog } from '../audit/audit-log.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { Maintenance } from '../system/maintenance.js';
import type { SystemStateStore } from '../system/system-state-store.js';
import { pluginFolder, pluginFolderAside } from './backup-files.js';
import { clearRestoreMarker, maintenanceInput, type RestoreMarker } from './restore-marker.js';

export interface InterruptedRestoreDeps {
  cfg: () => PlatformConfig;
  maintenance: Maintenance;
  systemState: SystemStateStore;
  audit: AuditLog;
  log: FastifyBaseLogger;
}

/**
 * Settles a restore whose process died (the caller holds the backup lock and saw its task no longer running):
 * maintenance goes back to what it was before the restore — only while it is still the restore's own, so an
 * administrator's later change stands — a plugin folder left half-swapped is put back, and the outcome is
 * written to the audit log. The database needs nothing: the restore's transaction committed or rolled back.
 */
export async function recoverInterruptedRestore(
  deps: InterruptedRestoreDeps,
  marker: RestoreMarker,
): Promise<{ maintenance: 'restored' | 'unchanged' }> {
  const current = deps.maintenance.current();
  const ours = current.enabled && current.message === marker.message;
  if (ours) await deps.maintenance.set(maintenanceInput(marker.previous), 'system');
  const plugins = await settlePluginFolder(deps.cfg(), marker.restore_id);
  const outcome = { maintenance: ours ? ('restored' as const) : ('unchanged' as const) };
  await deps.audit.write({
    action: 'backup.restore',
    resourceType: 'backup',
    resourceId: marker.backup_id,
    details: {
      restore_id: marker.restore_id,
      status: 'interrupted',
      started_at: marker.started_at,
      started_by: marker.actor,
      maintenance: outcome.maintenance,
      maintenance_enabled: ours ? marker.previous.enabled : current.enabled,
      plugin_folder: plugins,
    },
    actorId: null,
    adminUser: 'system',
  });
  await clearRestoreMarker(deps.systemState);
  deps.log.warn(
    { restore_id: marker.restore_id, backup_id: marker.backup_id, ...outcome },
    'a restore was interrupted (its process stopped); maintenance mode is back to its state before it',
  );
  return outcome;
}

/**
 * The plugin swap renames the live folder aside, then the restored one in. A crash between the two leaves no
 * live folder: the one set aside goes back (the packages are unpacked again from the database as needed).
 */
async function settlePluginFolder(cfg: PlatformConfig, restoreId: string): Promise<string> {
  const live = pluginFolder(cfg);
  const aside = pluginFolderAside(cfg, restoreId);
  if (!(await stat(aside).catch(() => undefined))) return 'untouched';
  if (await stat(live).catch(() => undefined)) {
    await rm(aside, { recursive: true, force: true });
    return 'restored';
  }
  await rename(aside, live);
  return 'put back';
}
