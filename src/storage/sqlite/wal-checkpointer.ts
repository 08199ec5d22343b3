import { Worker } from 'node:worker_threads';
import { SQLITE_DRIVER_PATH } from './better-sqlite3.js';

// How often the checkpointer looks for new commits, and the WAL size (in pages) past which the writing
// connection checkpoints by itself: a safety net for a checkpointer that stopped or cannot keep up, and what
// lets a WAL that is always being written to start over from its beginning (see below).
const INTERVAL_MS = 100;
export const FALLBACK_AUTOCHECKPOINT_PAGES = 4000;

/**
 * The checkpointer's thread: its own connection to the database file, which copies committed WAL pages into
 * the database (a PASSIVE checkpoint: it never waits for or blocks the writer) whenever another connection
 * committed since its last look. It is CommonJS run with `eval`, so it needs no file of its own in the bundle.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 100');
db.pragma('synchronous = NORMAL');
const dataVersion = db.prepare('pragma data_version').pluck();
let seen = dataVersion.get();
const timer = setInterval(() => {
  try {
    const version = dataVersion.get();
    if (version === seen) return;
    seen = version;
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    // Every frame copied: the next write starts the WAL over (see WalCheckpointer's onEmptied).
    const emptied = result.busy === 0 && result.log > 0 && result.checkpointed === result.log;
    parentPort.postMessage({ pages: result.checkpointed, emptied });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message) });
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * Checkpoints a WAL-mode SQLite database from a worker thread. Left to the writing connection, a checkpoint
 * runs inside the commit that crosses `wal_autocheckpoint` pages: it copies the WAL into the database and
 * syncs it to disk while the event loop waits, which under a steady write load was about a third of the time
 * spent committing. Here the copying and the sync happen on another thread. The writing connection keeps a
 * higher `wal_autocheckpoint` (FALLBACK_AUTOCHECKPOINT_PAGES): with writes arriving during every checkpoint,
 * the WAL would otherwise never be wholly copied at a moment with no writer, which is when SQLite starts it
 * over; that checkpoint then finds almost everything already copied.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private stopped: Promise<void> | undefined;
  private exited = false;
  checkpoints = 0;
  pages = 0;
  lastError: string | undefined;

  /**
   * `onEmptied`: told when a checkpoint copied every frame of the WAL. The next write then starts the WAL over
   * from its beginning, and whichever connection makes it writes a new WAL header and syncs it inside its
   * commit, at any `synchronous` level but OFF (SQLite guards against reordered writes after a restart). Made by
   * the server's connection, that sync held the event loop: 52–70 ms traced right after a backup. The owner
   * makes that first write on a thread of its own instead (sqlite-database.ts).
   */
  constructor(file: string, onEmptied?: () => void) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        file,
        intervalMs: INTERVAL_MS,
        module: SQLITE_DRIVER_PATH,
      },
    });
    // It only ever waits on its timer: it does not keep the process alive by itself.
    this.worker.unref();
    this.worker.on('message', (m: { pages?: number; emptied?: boolean; error?: string }) => {
      if (m.error !== undefined) this.lastError = m.error;
      else {
        this.checkpoints += 1;
        this.pages += Math.max(0, m.pages ?? 0);
        if (m.emptied) onEmptied?.();
      }
    });
    this.worker.once('exit', () => {
      this.exited = true;
    });
    this.worker.on('error', (err) => {
      // The writing connection's own checkpoints take over (FALLBACK_AUTOCHECKPOINT_PAGES).
      this.lastError = err.message;
    });
  }

  /** Stops the thread and closes its connection; resolves when it has exited. */
  stop(): Promise<void> {
    this.stopped ??= new Promise<void>((resolve) => {
      if (this.exited) return resolve();
      const timer = setTimeout(() => void this.worker.terminate(), 2000);
      this.worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.worker.postMessage('stop');
    });
    return this.stopped;
  }
}
