import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Kysely, SqliteDialect } from 'kysely';
import { SqliteDriver } from '../../storage/sqlite/better-sqlite3.js';
import { ReaderPoolDialect } from '../../storage/sqlite/reader-pool-dialect.js';
import { SqliteReaderPool } from '../../storage/sqlite/sqlite-reader-pool.js';
import { registerUnicodeLower } from '../../storage/sqlite/unicode-lower.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES, WalCheckpointer } from '../../storage/sqlite/wal-checkpointer.js';
import { KyselyLogStore } from '../kysely-log-store.js';
import { createLogEntriesTable } from '../log-entries-schema.js';
import type { LogTables } from '../log-tables.js';

/**
 * Embedded mode: the log store in `<data_dir>/logs.db`, its own connection in WAL mode, so batched log
 * writes never hold the main database's single writer lock.
 */
export async function createSqliteLogStore(dataDir: string): Promise<KyselyLogStore> {
  mkdirSync(resolve(dataDir), { recursive: true });
  const file = resolve(dataDir, 'logs.db');
  const sqlite = new SqliteDriver(file);
  sqlite.pragma('journal_mode = WAL');
  // Losing the last second of logs in a power cut is acceptable; an fsync per batch is not needed.
  sqlite.pragma('synchronous = NORMAL');
  // What still syncs the disk at NORMAL are checkpoints: left to this connection, the flush that crossed 1,000
  // pages of WAL copied them and synced both files on the server's thread, which then waits as long as the disk
  // is busy (a backup, a purge). A thread of its own checkpoints instead, as for the main database.
  const checkpointer = new WalCheckpointer(file);
  sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  sqlite.pragma('busy_timeout = 5000');
  // Statement journals of its multi-row inserts in memory, not in temporary files (as the main database).
  sqlite.pragma('temp_store = MEMORY');
  // SQLite's own lower() folds ASCII only: the search lowers both sides, so it must fold as JavaScript (and
  // PostgreSQL) do, or `ÄRGER` would not even find itself.
  registerUnicodeLower(sqlite, 'lower');
  const db = new Kysely<LogTables>({ dialect: new SqliteDialect({ database: sqlite }) });
  await createLogEntriesTable(db as unknown as Kysely<unknown>, true);
  // Searches count and page through every kept entry: one reader thread, as `lower` above.
  const readers = new SqliteReaderPool(file, { threads: 1, lowerFunctions: ['lower'] });
  const reads = new Kysely<LogTables>({ dialect: new ReaderPoolDialect(readers) });
  let closed = false;
  return new KyselyLogStore(
    'sqlite',
    db,
    async () => {
      if (closed) return;
      closed = true;
      await checkpointer.stop();
      await readers.close();
      await db.destroy();
    },
    reads,
  );
}
