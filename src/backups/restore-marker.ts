import type { MaintenanceState } from '../system/maintenance.js';
import type { SystemStateStore } from '../system/system-state-store.js';

/**
 * The `system_state` row a restore writes before it turns maintenance on and removes once maintenance is back
 * to what it was. Found while no restore runs, it means a process died mid-restore: the start-up check uses it
 * to put maintenance back. A restore keeps this row in place (backup-scope), like the maintenance switch.
 */
export const RESTORE_MARKER_KEY = 'restore.in_progress';

export interface RestoreMarker {
  restore_id: string;
  backup_id: string;
  started_at: string;
  actor: string;
  /** The maintenance message the restore sets: while it is still the one shown, the restore's mode is on. */
  message: string;
  /** Maintenance as it was before the restore, to put back. */
  previous: MaintenanceState;
}

export const readRestoreMarker = (store: SystemStateStore): Promise<RestoreMarker | undefined> =>
  store.get<RestoreMarker>(RESTORE_MARKER_KEY);

export const writeRestoreMarker = (store: SystemStateStore, marker: RestoreMarker): Promise<void> =>
  store.set(RESTORE_MARKER_KEY, marker);

export const clearRestoreMarker = (store: SystemStateStore): Promise<void> =>
  store.delete(RESTORE_MARKER_KEY);

/** What `Maintenance.set` takes to put a saved state back (its times start again from now). */
export function maintenanceInput(previous: MaintenanceState) {
  return previous.enabled
    ? {
        enabled: true,
        message: previous.message,
        ...(previous.estimated_duration_minutes === null
          ? {}
          : { estimated_duration_minutes: previous.estimated_duration_minutes }),
        allow_admin_access: previous.allow_admin_access,
      }
    : { enabled: false };
}
