import type { Dialect } from '../storage/database.js';
import { TABLES_OUTSIDE_DATABASE_COMPONENT } from './backup-scope.js';
import { describeTables, type LooseDb } from './database-schema.js';
import { appliedMigrations } from './database-snapshot.js';
import { countRows, type DumpedTable, dumpTables } from './table-dump.js';

/** What a backup reads from one snapshot of the database. */
export interface SnapshotDump {
  /** The migrations applied: the archive's schema version. */
  schemaVersion: string[];
  /** The tables dumped as JSON Lines files (when the `database` component is asked for). */
  tables?: Record<string, DumpedTable>;
  /** The rows of `config_overrides`, by key (when the `configuration` component is asked for). */
  configOverrides?: Record<string, unknown>[];
}

export interface SnapshotWants {
  database: boolean;
  configuration: boolean;
}

export interface SnapshotDumpOptions {
  signal?: AbortSignal | undefined;
  /** After each page: the rows dumped so far, and the estimate of all of them (at least 1). */
  onRows?: ((rows: number, estimate: number) => void) | undefined;
}

/**
 * Reads a backup's database part from a snapshot (database-snapshot): the schema version, the tables into
 * `<dir>/database/*.jsonl` (table-dump), and the configuration's rows, all of the same moment. Run on the
 * platform's thread for PostgreSQL and an in-memory SQLite, and in a worker thread for a SQLite file
 * (table-dump-worker).
 */
export async function dumpSnapshot(
  db: LooseDb,
  dialect: Dialect,
  dir: string,
  wants: SnapshotWants,
  options: SnapshotDumpOptions = {},
): Promise<SnapshotDump> {
  const out: SnapshotDump = { schemaVersion: await appliedMigrations(db) };
  if (wants.database) {
    const tables = (await describeTables(db, dialect)).filter(
      (t) => !TABLES_OUTSIDE_DATABASE_COMPONENT.has(t.name),
    );
    const estimate = Math.max(1, await countRows(db, dialect, tables));
    out.tables = await dumpTables(db, dialect, tables, dir, {
      signal: options.signal,
      onRows: (rows) => options.onRows?.(rows, estimate),
    });
  }
  if (wants.configuration) {
    out.configOverrides = await db.selectFrom('config_overrides').selectAll().orderBy('key').execute();
  }
  return out;
}
