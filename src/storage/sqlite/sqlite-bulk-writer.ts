import type { CompiledQuery, QueryResult } from 'kysely';
import { SqliteThread, sqliteThreadSource } from './sqlite-thread.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES } from './wal-checkpointer.js';

/**
 * The writer thread: a connection of its own to the database file that runs a batch of statements in one
 * transaction and posts back each statement's rows and changed-row count. A batch is committed synced
 * (`synchronous = FULL`: an emit's events, answered once durable) or not (a bulk job's chunk, whose job syncs
 * the WAL afterwards off every thread that serves: `Database.syncWal`); either way the commit, and its wait for
 * the disk, are this thread's.
 */
const WORKER_SOURCE = `${sqliteThreadSource(
  [
    'busy_timeout = 5000',
    'synchronous = NORMAL',
    'foreign_keys = ON',
    'temp_store = MEMORY',
    `cache_size = -${16 * 1024}`,
    `wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`,
  ],
  200,
)}
let synced = false;
const run = db.transaction((batch) =>
  batch.map((q) => {
    const statement = prepared(q.sql);
    if (statement.reader) {
      const rows = statement.all(q.parameters);
      return { rows, changes: rows.length };
    }
    return { rows: [], changes: statement.run(q.parameters).changes };
  }),
);
serve((m) => {
  if (m.synced !== synced) {
    db.pragma(m.synced ? 'synchronous = FULL' : 'synchronous = NORMAL');
    synced = m.synced;
  }
  return { results: run(m.batch) };
});
`;

/**
 * Runs batches of writes on a thread of its own: the emits' event batches (synced) and the chunks of bulk jobs
 * (unsynced). An event batch's commit waits for the disk's sync: 2–80 ms on a shared disk, during which the
 * server's thread, were it the one committing, would serve nothing. A chunk deleting events (a purge) changes
 * pages of every index of the events and of the roll-ups, scattered over the store: some 17 pages written to the
 * WAL per event. Run on the server's thread, those writes held it for the whole commit, and longer whenever the
 * kernel throttled a process writing that much (single `pwrite` calls of 20–90 ms were traced). The caller holds
 * the server's own connection idle while a batch runs (`Database.bulkBatch`, `Database.durableBatch`), so the two never wait for each
 * other's lock; the server's other queries wait their turn without holding its thread. Started at the first
 * batch; keeps the process alive only while it has work.
 */
export class SqliteBulkWriter {
  private thread: SqliteThread | undefined;
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly lowerFunctions: readonly string[],
  ) {}

  /** Whether the thread is up (it starts with the first batch). */
  get running(): boolean {
    return this.thread !== undefined;
  }

  /**
   * Runs `batch` in one transaction, its commit synced to disk when `synced`; resolves to each statement's
   * result once committed.
   */
  async run(batch: readonly CompiledQuery[], synced = false): Promise<QueryResult<unknown>[]> {
    if (this.closed) throw new Error('the database is closed');
    // The next batch after a thread stopped starts a new one.
    this.thread ??= new SqliteThread(
      WORKER_SOURCE,
      { file: this.file, lowerFunctions: this.lowerFunctions },
      (t) => {
        if (this.thread === t) this.thread = undefined;
      },
    );
    const answer = await this.thread.request({
      synced,
      batch: batch.map((q) => ({ sql: q.sql, parameters: q.parameters })),
    });
    const results = (answer['results'] as { rows: unknown[]; changes: number }[] | undefined) ?? [];
    return results.map((r) => ({ rows: r.rows, numAffectedRows: BigInt(r.changes) }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.thread?.stop();
  }
}
