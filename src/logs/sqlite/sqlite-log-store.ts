import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { registerUnicodeLower } from '../../storage/sqlite/unicode-lower.js';
import { KyselyLogStore } from '../kysely-log-store.js';
import { createLogEntriesTable } from '../log-entries-schema.js';
import type { LogTables } from '../log-tables.js';

/**
 * Embedded mode: the log store in `<data_dir>/logs.db`, its own connection in WAL mode, so batched log
 * writes never hold the main database's single writer lock.
 */
export async function createSqliteLogStore(dataDir: string): Promise<KyselyLogStore> {
  mkdirSync(resolve(dataDir), { recursive: true });
  const sqlite = new BetterSqlite3(resolve(dataDir, 'logs.db'));
  sqlite.pragma('journal_mode = WAL');
  // Losing the last second of logs in a power cut is acceptable; an fsync per batch is not needed.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  // Statement journals of its multi-row inserts in memory, not in temporary files (as the main database).
  sqlite.pragma('temp_store = MEMORY');
  // SQLite's own lower() folds ASCII only: the search lowers both sides, so it must fold as JavaScript (and
  // PostgreSQL) do, or `ÄRGER` would not even find itself.
  registerUnicodeLower(sqlite, 'lower');
  const db = new Kysely<LogTables>({ dialect: new SqliteDialect({ database: sqlite }) });
  await createLogEntriesTable(db as unknown as Kysely<unknown>, true);
  let closed = false;
  return new KyselyLogStore('sqlite', db, async () => {
    if (closed) return;
    closed = true;
    await db.destroy();
  });
}
