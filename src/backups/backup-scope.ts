/**
 * What the `database` component of a backup covers: every table found at run time, except these.
 * - the migration bookkeeping (the schema is recreated by migrations, not restored);
 * - the backup catalogue (it describes the archive files on this disk, which a restore does not change);
 * - task history (a restore runs as a task; replacing the task table under it would lose its own record);
 * - `config_overrides`, which travels as `config/overrides.json` in the `configuration` component;
 * - the log store, which is the `logs` component (exported when asked, never restored over newer logs).
 */
export const TABLES_OUTSIDE_DATABASE_COMPONENT = new Set([
  'platform_migrations',
  'platform_migrations_lock',
  'backups',
  'tasks',
  'task_logs',
  'config_overrides',
  'log_entries',
]);

/**
 * Rows that belong to the running installation rather than to its data: a dump leaves them out and a
 * restore leaves them in place. The JWT signing secret is a credential (and must keep verifying the
 * tokens this installation issued), maintenance is the live switch the restore itself flips, and the
 * config version is advanced by the `configuration` component instead.
 */
export const INSTALLATION_ROWS: Readonly<Record<string, { column: string; values: readonly string[] }>> = {
  system_state: { column: 'key', values: ['auth.jwt_secret', 'maintenance', 'config.version'] },
};
