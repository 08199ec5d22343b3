import { Worker } from 'node:worker_threads';
import { SQLITE_DRIVER_PATH } from './better-sqlite3.js';

/**
 * The start of a SQLite thread's program (CommonJS, run with `eval`, so it needs no file of its own in the
 * bundle): `db`, a connection to the database file opened with `pragmas`, with the functions that lower text as
 * JavaScript does (unicode-lower.ts); `prepared(sql)`, its statements kept by SQL text (the platform's
 * statements are few texts run many times), the least recently added dropped past `maxStatements`; and
 * `serve(handle)`, which answers each message `{ id, ... }` with `{ id, ...handle(message) }`, or with the error's
 * message and code, and closes the connection on 'stop'.
 */
export function sqliteThreadSource(pragmas: readonly string[], maxStatements: number): string {
  return `
const { parentPort, workerData } = require('node:worker_threads');
// On Linux a thread has a niceness of its own (0 = the calling thread).
if (workerData.niceness) { try { require('node:os').setPriority(0, workerData.niceness); } catch {} }
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
${pragmas.map((p) => `db.pragma(${JSON.stringify(p)});`).join('\n')}
for (const name of workerData.lowerFunctions) {
  db.function(name, { deterministic: true }, (v) => (typeof v === 'string' ? v.toLowerCase() : v));
}
const statements = new Map();
const prepared = (sql) => {
  let statement = statements.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    statements.set(sql, statement);
    if (statements.size > ${maxStatements}) statements.delete(statements.keys().next().value);
  }
  return statement;
};
const serve = (handle) =>
  parentPort.on('message', (m) => {
    if (m === 'stop') {
      db.close();
      parentPort.close();
      return;
    }
    try {
      parentPort.postMessage({ id: m.id, ...handle(m) });
    } catch (err) {
      parentPort.postMessage({ id: m.id, error: String(err && err.message), code: err && err.code });
    }
  });
`;
}

interface Pending {
  resolve(answer: Record<string, unknown>): void;
  reject(err: Error): void;
}

/**
 * The server's side of one SQLite thread (a program made with `sqliteThreadSource`): sends it requests and
 * resolves each with the thread's answer, or rejects it with an error of the thread's message and code. The
 * thread keeps the process alive only while it has requests under way; should it stop, its waiting requests
 * fail and `onExit` is told (the owner starts another for the next request).
 */
export class SqliteThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(
    source: string,
    data: { file: string; lowerFunctions: readonly string[]; niceness?: number },
    onExit: (thread: SqliteThread) => void,
  ) {
    this.worker = new Worker(source, {
      eval: true,
      // Plain CommonJS: none of the process's loaders (tsx in development) to load first.
      execArgv: [],
      workerData: { ...data, module: SQLITE_DRIVER_PATH },
    });
    this.worker.unref();
    this.worker.on('message', (m: { id: number; error?: string; code?: string }) => {
      const waiting = this.pending.get(m.id);
      if (!waiting) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if (m.error === undefined) waiting.resolve(m as Record<string, unknown>);
      else waiting.reject(Object.assign(new Error(m.error), m.code ? { code: m.code } : {}));
    });
    const fail = (err: Error) => {
      onExit(this);
      for (const waiting of this.pending.values()) waiting.reject(err);
      this.pending.clear();
    };
    this.worker.on('error', fail);
    this.worker.once('exit', () => fail(new Error('the database thread stopped')));
  }

  /** Requests under way. */
  get busy(): number {
    return this.pending.size;
  }

  /** Sends `message` (with an id added); resolves to the thread's answer. */
  request(message: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id });
    });
  }

  /** Asks the thread to close its connection and end; ends it after 2 s if it has not. */
  async stop(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    const timer = setTimeout(() => void this.worker.terminate(), 2000);
    this.worker.postMessage('stop');
    await exited;
    clearTimeout(timer);
  }
}
