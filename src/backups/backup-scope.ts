import { isSecretKey } from '../config/config-masking.js';
import { RESTORE_MARKER_KEY } from './restore-marker.js';

/**
 * What the `database` component of a backup covers: every table found at run time, except these.
 * - the migration bookkeeping (the schema is recreated by migrations, not restored);
 * - the backup catalogue (it describes the archive files on this disk, which a restore does not change);
 * - task history (a restore runs as a task; replacing the task table under it would lose its own record);
 * - `config_overrides`, which travels as `config/overrides.json` in the `configuration` component;
 * - the log store, which is the `logs` component (exported when asked, never restored over newer logs);
 * - the event roll-ups and their keys, derived from the events by triggers (a restore's deletes and inserts of
 *   events keep them right), how far their minutes were compacted (it describes this table, migration 0030), and the
 *   progress of purges, which is task bookkeeping (migration 0015).
 */
export const TABLES_OUTSIDE_DATABASE_COMPONENT = new Set([
  'platform_migrations',
  'platform_migrations_lock',
  'backups',
  'tasks',
  'task_logs',
  'config_overrides',
  'log_entries',
  'event_rollups',
  'event_rollup_keys',
  'event_rollup_compaction',
  'event_purge_progress',
]);

/**
 * Rows that belong to the running installation rather than to its data: a dump leaves them out and a
 * restore leaves them in place. In `system_state` these are the generated fallbacks of secret settings
 * (stored under the setting's own name: `auth.jwt_secret`, `events.encryption_key`, …) — credentials never
 * travel in an archive — plus the live maintenance switch the restore itself flips, the marker of the restore
 * under way (restore-marker), and the config version, which the `configuration` component advances instead.
 */
export const INSTALLATION_ROWS: Readonly<
  Record<string, { column: string; keep: (value: string) => boolean }>
> = {
  system_state: {
    column: 'key',
    keep: (key) =>
      isSecretKey(key) || key === 'maintenance' || key === RESTORE_MARKER_KEY || key === 'config.version',
  },
};
