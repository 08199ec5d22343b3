import type { Compilable, Kysely, QueryResult, Transaction } from 'kysely';
import type { Database } from './database.js';
import type { Tables } from './tables.js';

/**
 * How a bulk job (purge, retention, replay, recovery, clean-up) writes its chunks. On SQLite with synced commits
 * (`database.sqlite_synchronous = full`) a commit syncs the WAL inside `COMMIT`, on the server's thread: 4 ms at
 * the median and up to 80 ms on a shared disk, for every chunk. Here a chunk commits unsynced
 * (`Database.unsyncedTransaction`) and the job calls `sync` (`Database.syncWal`, an fdatasync on libuv's thread
 * pool) before it reports the work as done or goes on to the next batch: what it wrote is as durable as before,
 * and the event loop serves requests meanwhile. Elsewhere (PostgreSQL, SQLite with `normal`) these are a plain
 * transaction and nothing.
 */
export interface BulkWrites {
  /** One chunk's transaction; on SQLite it holds the server's thread while it runs, its sync excepted. */
  transaction<T>(work: (trx: Transaction<Tables>) => Promise<T>): Promise<T>;
  /**
   * One chunk's statements in one transaction; resolves to each one's result. On a SQLite file they run on a
   * writer thread of its own (`Database.bulkBatch`), so the chunk never holds the server's thread.
   */
  batch(statements: readonly Compilable[]): Promise<QueryResult<unknown>[]>;
  /** Makes every chunk committed so far durable, off the server's thread. */
  sync(): Promise<void>;
}

/**
 * `work` in one `transaction`, then `sync`: on disk when this resolves, as a synced commit would be, without the
 * server's thread waiting for the disk on SQLite. For writes a caller is answered about (a task's record, an
 * audit entry).
 */
export async function durably<T>(
  writes: BulkWrites,
  work: (trx: Transaction<Tables>) => Promise<T>,
): Promise<T> {
  const result = await writes.transaction(work);
  await writes.sync();
  return result;
}

export function bulkWrites(
  database: Pick<Database, 'db' | 'unsyncedTransaction' | 'syncWal' | 'bulkBatch'>,
): BulkWrites {
  const synced = syncedWrites(database.db);
  const batch = database.bulkBatch
    ? (statements: readonly Compilable[]) => database.bulkBatch!(statements.map((s) => s.compile()))
    : synced.batch;
  if (database.unsyncedTransaction && database.syncWal) {
    return {
      transaction: (work) => database.unsyncedTransaction!(work),
      batch,
      sync: () => database.syncWal!(),
    };
  }
  return { ...synced, batch };
}

/** Plain transactions, synced by their commit where the database syncs commits: `sync` has nothing to do. */
export function syncedWrites(db: Kysely<Tables>): BulkWrites {
  return {
    transaction: (work) => db.transaction().execute(work),
    batch: (statements) =>
      db.transaction().execute(async (trx) => {
        const results: QueryResult<unknown>[] = [];
        for (const s of statements) results.push(await trx.executeQuery(s.compile()));
        return results;
      }),
    sync: async () => {},
  };
}
