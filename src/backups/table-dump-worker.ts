/**
 * The entry of the worker thread that reads a backup's database part from a SQLite file (dump-in-worker.ts):
 * its own read-only connection and read transaction (database-snapshot), the table dump and the
 * configuration's rows (snapshot-dump), so the pages' reads, their JSON encoding and hashing, and their garbage
 * stay off the platform's event loop and heap. It posts its progress and, at the end, its result or its error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { failureOf, type WorkerEnd } from './backup-worker.js';
import { readSqliteSnapshot } from './database-snapshot.js';
import { dumpSnapshot, type SnapshotDump, type SnapshotWants } from './snapshot-dump.js';

export interface DumpWorkerData {
  /** The SQLite database file. */
  file: string;
  /** The staging folder: the tables go to `<dir>/database/*.jsonl`. */
  dir: string;
  wants: SnapshotWants;
}

/** After each page: the rows dumped so far, and the estimate of all of them. */
export type DumpProgress = { t: 'rows'; rows: number; estimate: number };

const post = (message: DumpProgress | WorkerEnd<SnapshotDump>) => parentPort?.postMessage(message);

async function run(data: DumpWorkerData) {
  try {
    const dump = await readSqliteSnapshot(data.file, (db) =>
      dumpSnapshot(db, 'sqlite', data.dir, data.wants, {
        onRows: (rows, estimate) => post({ t: 'rows', rows, estimate }),
      }),
    );
    post({ t: 'done', result: dump });
  } catch (err) {
    post(failureOf(err));
  }
}

if (parentPort) void run(workerData as DumpWorkerData);
