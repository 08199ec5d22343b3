import type { CompiledQuery, Kysely, QueryResult, Transaction } from 'kysely';
import type { Tables } from './tables.js';

export type Dialect = 'sqlite' | 'postgres';

/** The storage backend the rest of the platform sees; SQLite and PostgreSQL each implement it. */
export interface Database {
  readonly db: Kysely<Tables>;
  readonly dialect: Dialect;
  /**
   * Where reads whose cost grows with the store go (list counts and deep pages, audit trails, log searches,
   * metric series, analytics): on SQLite, read-only connections in worker threads over the write-ahead log
   * (sqlite-reader-pool.ts), so a long read holds a thread of its own and never the server's; they see every
   * committed write. PostgreSQL's queries are already off the thread: there it is `db` itself. Not for
   * transactions, nor for reads that must see a transaction's own writes.
   */
  readonly reads: Kysely<Tables>;
  /**
   * PostgreSQL: the URL its pool connects with, for a worker thread that opens a connection of its own the same
   * way (a backup's dump, src/backups/dump-in-worker.ts). It may hold a password: never log or answer it.
   * Absent for SQLite.
   */
  readonly connectionString?: string;
  /** Round-trips a trivial query; resolves to its duration in milliseconds. */
  ping(): Promise<number>;
  pool(): { active: number; idle: number; total: number; waiting: number };
  /**
   * A value that differs whenever any row of the database may have changed since it was last read, read
   * without a round trip; `undefined` where that cannot be known cheaply (PostgreSQL, several writers).
   * Caches of query results (the event list's pages) are valid only while it stays the same.
   */
  changeStamp(): string | undefined;
  /**
   * SQLite: what the checkpointer thread has done (src/storage/sqlite/wal-checkpointer.ts), counted as it
   * reported it. Absent for PostgreSQL and in-memory databases.
   */
  walCheckpoints?(): { checkpoints: number; pages: number };
  /**
   * SQLite with `sqlite_synchronous = full`: runs `work` in a transaction whose commit is not synced to disk
   * before it returns (it survives a crash of the process; a power loss may take it, and the next synced
   * commit or checkpoint makes it durable). For writes whose loss only makes work be done again, and that
   * nobody is answered about: the platform's own bookkeeping (storage/bookkeeping.ts, which falls back to
   * `db.transaction()` elsewhere) and bulk jobs' chunks (bulkWrites). Absent elsewhere.
   */
  unsyncedTransaction?<T>(work: (trx: Transaction<Tables>) => Promise<T>): Promise<T>;
  /**
   * SQLite with `sqlite_synchronous = full`: syncs the WAL file to disk on libuv's thread pool, making every
   * commit made so far durable, those of `unsyncedTransaction` included. A bulk job (purge, retention, replay,
   * recovery) commits its chunks unsynced and waits for this instead (`bulkWrites`): the same durability,
   * without holding the event loop for the sync (1–80 ms a commit on a shared disk). Absent elsewhere.
   */
  syncWal?(): Promise<void>;
  /**
   * SQLite on a file: runs `batch` in one transaction on a writer thread of its own, committed as
   * `unsyncedTransaction` commits (`syncWal` makes it durable), while the server's connection is held idle so
   * that neither waits for the other's lock; resolves to each statement's result. For a bulk job's chunks
   * (`bulkWrites().batch`), whose writes are scattered over the store. Absent elsewhere.
   */
  bulkBatch?(batch: readonly CompiledQuery[]): Promise<QueryResult<unknown>[]>;
  /**
   * SQLite on a file: runs `batch` in one transaction on the same writer thread, committed as the database
   * commits (synced with `sqlite_synchronous = full`), while the server's connection is held idle; resolves to
   * each statement's result once durable. For the emits' event batches: the commit's wait for the disk (2–80 ms
   * on a shared disk) is the writer thread's, and the server's thread serves meanwhile. Absent elsewhere.
   */
  durableBatch?(batch: readonly CompiledQuery[]): Promise<QueryResult<unknown>[]>;
  /** SQLite: how commits reach the disk, as the connection reports it (`pragma synchronous`). */
  synchronous?(): 'off' | 'normal' | 'full' | 'extra' | undefined;
  /**
   * SQLite: how many commits the server's connection has synced to disk, inside `COMMIT` on the server's thread,
   * since it opened (src/storage/sqlite/synced-commits.ts). The platform's own bookkeeping adds none
   * (storage/bookkeeping.ts); what users' requests write does. Absent for PostgreSQL.
   */
  syncedCommits?(): number;
  close(): Promise<void>;
}
