import type { Database } from './database.js';

/**
 * How the platform commits its own bookkeeping: writes it makes by itself, answering nobody (metric samples,
 * lease renewals, delivery claims, clean-ups, the time a session or an API key was last used). On SQLite with
 * `sqlite_synchronous = full` a plain commit syncs the WAL inside `COMMIT`, on the server's thread: 1–80 ms a
 * commit on a shared disk, and 230–280 ms (traced with strace) while a backup or a purge keeps the disk busy. These commit
 * unsynced instead (`Database.unsyncedTransaction`): they survive a crash of the process, and the next synced
 * commit or checkpoint (the WAL checkpointer's, within 100 ms of a commit) takes them to disk; a power loss
 * may take the last moments of them. Only for writes whose loss then is harmless: each caller says why where it
 * is wired (ADR 0013). Elsewhere (PostgreSQL, SQLite with `normal`) a plain transaction.
 */
export type Bookkeeping = NonNullable<Database['unsyncedTransaction']>;

export function bookkeeping(database: Pick<Database, 'db' | 'unsyncedTransaction'>): Bookkeeping {
  // Looked up at every commit, so a wrapper put on the database later (a test's count) sees these too.
  return database.unsyncedTransaction
    ? (work) => database.unsyncedTransaction!(work)
    : (work) => database.db.transaction().execute(work);
}
