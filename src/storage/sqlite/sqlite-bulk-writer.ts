import { Worker } from 'node:worker_threads';
import type { CompiledQuery, QueryResult } from 'kysely';
import { SQLITE_DRIVER_PATH } from './better-sqlite3.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES } from './wal-checkpointer.js';

/**
 * The writer thread: a connection of its own to the database file that runs a batch of statements in one
 * transaction and posts back each statement's rows and changed-row count. A batch is committed synced
 * (`synchronous = FULL`: an emit's events, answered once durable) or not (a bulk job's chunk, whose job syncs
 * the WAL afterwards off every thread that serves: `Database.syncWal`); either way the commit, and its wait for
 * the disk, are this thread's. CommonJS run with `eval`, like the reader threads, so it needs no file of its
 * own in the bundle.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
let synced = false;
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.pragma('temp_store = MEMORY');
db.pragma('cache_size = -${16 * 1024}');
db.pragma('wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}');
for (const name of workerData.lowerFunctions) {
  db.function(name, { deterministic: true }, (v) => (typeof v === 'string' ? v.toLowerCase() : v));
}
const statements = new Map();
const prepared = (sql) => {
  let statement = statements.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    statements.set(sql, statement);
    if (statements.size > 200) statements.delete(statements.keys().next().value);
  }
  return statement;
};
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
parentPort.on('message', (m) => {
  if (m === 'stop') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    if (m.synced !== synced) {
      db.pragma(m.synced ? 'synchronous = FULL' : 'synchronous = NORMAL');
      synced = m.synced;
    }
    parentPort.postMessage({ id: m.id, results: run(m.batch) });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message), code: err && err.code });
  }
});
`;

interface Pending {
  resolve(results: QueryResult<unknown>[]): void;
  reject(err: Error): void;
}

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
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly lowerFunctions: readonly string[],
  ) {}

  /**
   * Runs `batch` in one transaction, its commit synced to disk when `synced`; resolves to each statement's
   * result once committed.
   */
  run(batch: readonly CompiledQuery[], synced = false): Promise<QueryResult<unknown>[]> {
    if (this.closed) return Promise.reject(new Error('the database is closed'));
    this.worker ??= this.start();
    const worker = this.worker;
    const id = this.nextId++;
    return new Promise<QueryResult<unknown>[]>((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, synced, batch: batch.map((q) => ({ sql: q.sql, parameters: q.parameters })) });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    const timer = setTimeout(() => void worker.terminate(), 2000);
    worker.postMessage('stop');
    await exited;
    clearTimeout(timer);
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Plain CommonJS: none of the process's loaders (tsx in development) to load first.
      execArgv: [],
      workerData: { file: this.file, module: SQLITE_DRIVER_PATH, lowerFunctions: this.lowerFunctions },
    });
    worker.unref();
    worker.on(
      'message',
      (m: {
        id: number;
        results?: { rows: unknown[]; changes: number }[];
        error?: string;
        code?: string;
      }) => {
        const waiting = this.pending.get(m.id);
        if (!waiting) return;
        this.pending.delete(m.id);
        if (this.pending.size === 0) worker.unref();
        if (m.error !== undefined) {
          waiting.reject(Object.assign(new Error(m.error), m.code ? { code: m.code } : {}));
          return;
        }
        waiting.resolve((m.results ?? []).map((r) => ({ rows: r.rows, numAffectedRows: BigInt(r.changes) })));
      },
    );
    const fail = (err: Error) => {
      // The next batch starts a new thread.
      if (this.worker === worker) this.worker = undefined;
      for (const waiting of this.pending.values()) waiting.reject(err);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.once('exit', () => fail(new Error('the bulk writer thread stopped')));
    return worker;
  }
}
