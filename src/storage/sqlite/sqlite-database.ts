import { performance } from 'node:perf_hooks';
import type BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, sql, type Transaction } from 'kysely';
import type { Database } from '../database.js';
import type { Tables } from '../tables.js';
import { SqliteDriver } from './better-sqlite3.js';
import { ReaderPoolDialect } from './reader-pool-dialect.js';
import { SqliteBulkWriter } from './sqlite-bulk-writer.js';
import { SqliteReaderPool } from './sqlite-reader-pool.js';
import { withStatementCache } from './statement-cache.js';
import { countingSyncedCommits } from './synced-commits.js';
import { registerUnicodeLower, UNICODE_LOWER } from './unicode-lower.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES, WalCheckpointer } from './wal-checkpointer.js';
import { syncWalFile } from './wal-sync.js';

const CACHE_KIB = 32 * 1024;
const SYNCHRONOUS_LEVELS = ['off', 'normal', 'full', 'extra'] as const;

export interface SqliteOptions {
  /**
   * `full`: every commit is synced to disk before it returns, so what was answered survives a power loss.
   * `normal`: in WAL mode a commit survives a crash of the process, but the last ones may be lost with the
   * machine; the WAL is synced at checkpoints.
   */
  synchronous?: 'full' | 'normal';
}

export function createSqliteDatabase(file: string, options: SqliteOptions = {}): Database {
  const sqlite = new SqliteDriver(file);
  registerUnicodeLower(sqlite);
  // WAL lets readers run beside the one writer.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // A multi-row statement inside a transaction keeps a statement journal (the pages it changed, to undo it
  // alone); past 64 KiB SQLite spilled it to a new file in /var/tmp, opened, written and deleted for every
  // batch of events. In memory it costs a copy.
  sqlite.pragma('temp_store = MEMORY');
  // 32 MiB of page cache instead of 2 MiB: the right edges of the event indexes and the outbox's open rows
  // stay cached under load. Filled only as pages are read.
  sqlite.pragma(`cache_size = -${CACHE_KIB}`);
  // Checkpoints run on a thread of their own; this connection's are the fallback (see WalCheckpointer).
  // After a checkpoint that emptied the WAL, its restart (a new header, synced) is made by the writer thread:
  // a write that changes nothing a reader sees (`user_version`, which the platform does not use), while the
  // server's connection is held idle. A write of the server's connection in between restarts it itself, as it
  // does until the writer thread is up (the first emit or bulk job starts it: an idle instance does not pay
  // for a thread, some 9 MB, to save the odd sync of its own bookkeeping).
  let restarting = false;
  const restartWal = () => {
    if (restarting || closed || !bulk?.running) return;
    restarting = true;
    db.connection()
      .execute(() => bulk.run([CompiledQuery.raw(`pragma user_version = ${Number(userVersion.get())}`)]))
      .catch(() => {})
      .finally(() => {
        restarting = false;
      });
  };
  const checkpointer = sqlite.memory ? undefined : new WalCheckpointer(file, restartWal);
  if (checkpointer) sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  const commits = countingSyncedCommits(withStatementCache(sqlite), sqlite);
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: commits.handle }) });
  // An in-memory database has no file another connection could open: its reads stay on this connection.
  const readers = sqlite.memory ? undefined : new SqliteReaderPool(file, { lowerFunctions: [UNICODE_LOWER] });
  const reads = readers ? new Kysely<Tables>({ dialect: new ReaderPoolDialect(readers) }) : db;
  const bulk = sqlite.memory ? undefined : new SqliteBulkWriter(file, [UNICODE_LOWER]);
  let closed = false;
  // Rows this connection changed (committed or not: a read waits for an open transaction anyway), its
  // schema changes, and commits by any other connection to the file.
  const changes = sqlite.prepare('select total_changes()').pluck();
  const schemaVersion = sqlite.prepare('pragma schema_version').pluck();
  const dataVersion = sqlite.prepare('pragma data_version').pluck();
  const synchronous = sqlite.prepare('pragma synchronous').pluck();
  const userVersion = sqlite.prepare('pragma user_version').pluck();
  return {
    db,
    reads,
    dialect: 'sqlite',
    async ping() {
      const start = performance.now();
      await sql`select 1`.execute(db);
      return performance.now() - start;
    },
    changeStamp: () => (closed ? undefined : `${changes.get()}:${schemaVersion.get()}:${dataVersion.get()}`),
    ...(checkpointer
      ? { walCheckpoints: () => ({ checkpoints: checkpointer.checkpoints, pages: checkpointer.pages }) }
      : {}),
    synchronous: () => (closed ? undefined : SYNCHRONOUS_LEVELS[synchronous.get() as number]),
    syncedCommits: commits.count,
    ...(options.synchronous === 'normal'
      ? {}
      : { unsyncedTransaction: (work) => unsynced(db, sqlite, work) }),
    ...(options.synchronous === 'normal' || sqlite.memory
      ? {}
      : { syncWal: () => syncWalFile(`${file}-wal`) }),
    ...(bulk
      ? {
          bulkBatch: (batch) => db.connection().execute(() => bulk.run(batch)),
          durableBatch: (batch) =>
            db.connection().execute(() => bulk.run(batch, options.synchronous !== 'normal')),
        }
      : {}),
    pool: () => ({ active: 0, idle: closed ? 0 : 1, total: closed ? 0 : 1, waiting: 0 }),
    async close() {
      if (closed) return;
      closed = true;
      await checkpointer?.stop();
      await readers?.close();
      await bulk?.close();
      await db.destroy();
    },
  };
}

/**
 * A transaction committed with `synchronous = NORMAL` on a connection that runs FULL (Database.unsyncedTransaction).
 * The level can change only outside a transaction, and applies to every commit while it holds, so it is set
 * and put back while this holds the connection: no other query runs on it meanwhile.
 */
function unsynced<T>(
  db: Kysely<Tables>,
  sqlite: BetterSqlite3.Database,
  work: (trx: Transaction<Tables>) => Promise<T>,
): Promise<T> {
  return db.connection().execute(async (connection) => {
    sqlite.pragma('synchronous = NORMAL');
    try {
      return await connection.transaction().execute(work);
    } finally {
      // Never left at NORMAL: a transaction still open here (its rollback failed) is ended first.
      if (sqlite.inTransaction) sqlite.exec('rollback');
      sqlite.pragma('synchronous = FULL');
    }
  });
}
