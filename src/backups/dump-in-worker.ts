import { Worker } from 'node:worker_threads';
import { workerEntry } from '../kernel/worker-entry.js';
import type { SnapshotSource } from './database-snapshot.js';
import type { SnapshotDump, SnapshotDumpOptions, SnapshotWants } from './snapshot-dump.js';
import type { DumpWorkerData, DumpWorkerMessage } from './table-dump-worker.js';

// Built, `table-dump-worker.js` beside this module; from the sources, the TypeScript entry bundled as an IIFE
// for an `eval` worker, with the native drivers left to be loaded from node_modules (docs/adr/0010).
// pg is bundled (for a PostgreSQL source), all but its optional native binding, which it loads only on demand.
const ENTRY = workerEntry('table-dump-worker', import.meta.url, {
  format: 'iife',
  external: ['better-sqlite3', 'better-sqlite3-napi', 'pg-native'],
});

/**
 * The worker's heap. It holds one page of rows and its JSON text at a time — pages are sized to about 4 MB of
 * JSON (table-dump: 16 rows of events at the 256 KB payload limit, 500 of ordinary ones), the first page of a
 * table a single row — plus the driver's and Kysely's code. 64 MB bounds what the dump adds to the process (the
 * platform's own heap is some 100–150 MB) with room for the largest row the platform stores: an event of
 * `events.max_payload_bytes` (at most 16 MB), its JSON and the page's text (test/backups/dump-page-size.test.ts).
 * Its young generation is capped too, so the garbage between pages is collected early. A heap allowed to grow
 * is a heap that grows: with 96 MB and 16 MB the process's RSS during a backup of 10M events peaked at 262 MB.
 * Should the heap run out all the same, the backup dumps on the platform's thread (backup-builder).
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8 };

/**
 * Runs `dumpSnapshot` in a worker thread (table-dump-worker) with a connection of its own to `source` (a SQLite
 * file opened read-only, or the PostgreSQL server the platform's pool connects to): the event loop only
 * receives the progress and the result. Aborting `signal` terminates the worker (its connection closes with
 * it) and rejects with the signal's reason, as the dump on the loop did; a failure in the worker rejects with
 * an error of the same message (and code).
 */
export async function dumpInWorker(
  source: SnapshotSource,
  dir: string,
  wants: SnapshotWants,
  options: SnapshotDumpOptions = {},
): Promise<SnapshotDump> {
  const { signal } = options;
  signal?.throwIfAborted();
  const program = await ENTRY();
  signal?.throwIfAborted();
  const workerData: DumpWorkerData = { source, dir, wants };
  const worker =
    'file' in program
      ? new Worker(program.file, { workerData, resourceLimits: WORKER_LIMITS })
      : new Worker(program.code, { eval: true, workerData, resourceLimits: WORKER_LIMITS });
  return new Promise<SnapshotDump>((resolve, reject) => {
    // How the call ends, decided by the first of: the result, an error, the abort. It ends once the worker has
    // exited, so nothing writes into the staging folder the caller is about to remove.
    let outcome: (() => void) | undefined;
    const finish = (fn: () => void) => {
      if (outcome) return;
      outcome = fn;
      void worker.terminate();
    };
    const aborted = () => finish(() => reject(signal?.reason));
    signal?.addEventListener('abort', aborted, { once: true });
    worker.on('message', (message: DumpWorkerMessage) => {
      if (message.t === 'rows') options.onRows?.(message.rows, message.estimate);
      else if (message.t === 'done') finish(() => resolve(message.dump));
      else {
        const err = Object.assign(new Error(message.message), message.code ? { code: message.code } : {});
        err.name = message.name;
        if (message.stack) err.stack = message.stack;
        finish(() => reject(err));
      }
    });
    // An uncaught error, or the heap limit reached (ERR_WORKER_OUT_OF_MEMORY).
    worker.on('error', (err) => finish(() => reject(err)));
    worker.on('exit', (code) => {
      signal?.removeEventListener('abort', aborted);
      (outcome ?? (() => reject(new Error(`the backup's database worker stopped (exit code ${code})`))))();
    });
  });
}
