/**
 * The entry of the worker thread that reads a backup's database part (dump-in-worker.ts) from a SQLite file or
 * a PostgreSQL server: its own connection and read-only snapshot (database-snapshot), the table dump and the
 * configuration's rows (snapshot-dump), so the pages' reads, their JSON encoding and hashing, and their garbage
 * stay off the platform's event loop and heap. It posts its progress and, at the end, its result or its error;
 * its connection is closed before either.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readOwnSnapshot, type SnapshotSource } from './database-snapshot.js';
import { dumpSnapshot, type SnapshotDump, type SnapshotWants } from './snapshot-dump.js';

export interface DumpWorkerData {
  /** The database to open a connection of its own to. */
  source: SnapshotSource;
  /** The staging folder: the tables go to `<dir>/database/*.jsonl`. */
  dir: string;
  wants: SnapshotWants;
}

export type DumpWorkerMessage =
  | { t: 'rows'; rows: number; estimate: number }
  | { t: 'done'; dump: SnapshotDump }
  | { t: 'failed'; message: string; name: string; code: string | undefined; stack: string | undefined };

const post = (message: DumpWorkerMessage) => parentPort?.postMessage(message);

async function run(data: DumpWorkerData) {
  try {
    const dump = await readOwnSnapshot(data.source, (db, dialect) =>
      dumpSnapshot(db, dialect, data.dir, data.wants, {
        onRows: (rows, estimate) => post({ t: 'rows', rows, estimate }),
      }),
    );
    post({ t: 'done', dump });
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    post({
      t: 'failed',
      message: e.message,
      name: e.name,
      code: (e as NodeJS.ErrnoException).code,
      stack: e.stack,
    });
  }
}

if (parentPort) void run(workerData as DumpWorkerData);
