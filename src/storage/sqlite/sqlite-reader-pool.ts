import { Worker } from 'node:worker_threads';
import { SQLITE_DRIVER_PATH } from './better-sqlite3.js';

/**
 * A reader thread: a read-only connection to the database file, which runs the statements it is sent one
 * after the other and posts their rows back. Over the write-ahead log it reads the last committed state
 * beside the writer, never blocking it. CommonJS run with `eval`, like the checkpointer, so it needs no file
 * of its own in the bundle. Prepared statements are kept by SQL text (the platform's reads are few texts).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// On Linux a thread has a niceness of its own (0 = the calling thread): a long read then gives way to the
// server's thread whenever both want the same core.
try { require('node:os').setPriority(0, workerData.niceness); } catch {}
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('query_only = ON');
db.pragma('busy_timeout = 5000');
db.pragma('cache_size = -${8 * 1024}');
for (const name of workerData.lowerFunctions) {
  db.function(name, { deterministic: true }, (v) => (typeof v === 'string' ? v.toLowerCase() : v));
}
const statements = new Map();
parentPort.on('message', (m) => {
  if (m === 'stop') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    let statement = statements.get(m.sql);
    if (!statement) {
      statement = db.prepare(m.sql);
      statements.set(m.sql, statement);
      if (statements.size > 200) statements.delete(statements.keys().next().value);
    }
    if (!statement.reader) throw new Error('a reader thread runs reads only');
    parentPort.postMessage({ id: m.id, rows: statement.all(m.parameters) });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message), code: err && err.code });
  }
});
`;

/** How much lower than the server's thread a reader thread's CPU priority is (nice 10 of 19). */
const READER_NICENESS = 10;

export interface SqliteReaderPoolOptions {
  /** Threads, each with its own connection; reads beyond that wait for one (default 2: the machine's cores). */
  threads?: number;
  /** Functions to register that lower text as JavaScript does (see unicode-lower.ts). */
  lowerFunctions?: readonly string[];
}

interface Pending {
  resolve(rows: unknown[]): void;
  reject(err: Error): void;
}

interface Reader {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * Threads that run read-only SQL on a SQLite file in WAL mode. better-sqlite3 is synchronous: a read whose
 * cost grows with the store (a count, a deep page, a scan) held the whole server on the thread that ran it.
 * Here it holds only a reader thread. Threads start at the first read and keep the process alive only while
 * they have work.
 */
export class SqliteReaderPool {
  private readonly readers: (Reader | undefined)[];
  private readonly module = SQLITE_DRIVER_PATH;
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly options: SqliteReaderPoolOptions = {},
  ) {
    this.readers = new Array(Math.max(1, options.threads ?? 2)).fill(undefined);
  }

  /** Runs one read-only statement on the least busy thread; resolves to its rows. */
  all(sql: string, parameters: readonly unknown[]): Promise<unknown[]> {
    if (this.closed) return Promise.reject(new Error('the database is closed'));
    const reader = this.leastBusy();
    const id = this.nextId++;
    return new Promise<unknown[]>((resolve, reject) => {
      if (reader.pending.size === 0) reader.worker.ref();
      reader.pending.set(id, { resolve, reject });
      reader.worker.postMessage({ id, sql, parameters });
    });
  }

  /** Stops every thread, failing the reads still waiting. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      this.readers.map(async (reader) => {
        if (!reader) return;
        const exited = new Promise<void>((resolve) => reader.worker.once('exit', () => resolve()));
        const timer = setTimeout(() => void reader.worker.terminate(), 2000);
        reader.worker.postMessage('stop');
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  /** An idle thread, else a new one while there is room (each takes a few hundred ms to start), else the least busy. */
  private leastBusy(): Reader {
    let best: Reader | undefined;
    let free = -1;
    for (let i = 0; i < this.readers.length; i++) {
      const reader = this.readers[i];
      if (!reader) free = free < 0 ? i : free;
      else if (!best || reader.pending.size < best.pending.size) best = reader;
    }
    if (best && (best.pending.size === 0 || free < 0)) return best;
    const started = this.start(free);
    this.readers[free] = started;
    return started;
  }

  private start(slot: number): Reader {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Plain CommonJS: none of the process's loaders (tsx in development) to load first.
      execArgv: [],
      workerData: {
        file: this.file,
        module: this.module,
        lowerFunctions: this.options.lowerFunctions ?? [],
        niceness: READER_NICENESS,
      },
    });
    worker.unref();
    const reader: Reader = { worker, pending: new Map() };
    worker.on('message', (m: { id: number; rows?: unknown[]; error?: string; code?: string }) => {
      const waiting = reader.pending.get(m.id);
      if (!waiting) return;
      reader.pending.delete(m.id);
      if (reader.pending.size === 0) worker.unref();
      if (m.error === undefined) waiting.resolve(m.rows ?? []);
      else waiting.reject(Object.assign(new Error(m.error), m.code ? { code: m.code } : {}));
    });
    const fail = (err: Error) => {
      // The next read starts a new thread in this slot.
      if (this.readers[slot] === reader) this.readers[slot] = undefined;
      for (const waiting of reader.pending.values()) waiting.reject(err);
      reader.pending.clear();
    };
    worker.on('error', fail);
    worker.once('exit', () => fail(new Error('the reader thread stopped')));
    return reader;
  }
}
