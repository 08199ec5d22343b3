/**
 * The entry of the worker thread that packs a backup's archive (archive-in-worker.ts): the tar stream of the
 * staged files, its compression, encryption and hashing, and the writes of the archive file, so that none of
 * it takes turns of the platform's event loop. It posts the archive's size and checksum, or its error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type ArchiveOptions, writeArchive } from './archive-writer.js';
import { failureOf, type WorkerEnd } from './backup-worker.js';

/** What the worker packs: writeArchive's options (its signal aside: aborting terminates the worker). */
export type ArchiveWorkerData = Omit<ArchiveOptions, 'signal'>;

export type ArchiveWritten = Awaited<ReturnType<typeof writeArchive>>;

const post = (message: WorkerEnd<ArchiveWritten>) => parentPort?.postMessage(message);

async function run(data: ArchiveWorkerData) {
  try {
    post({ t: 'done', result: await writeArchive(data) });
  } catch (err) {
    post(failureOf(err));
  }
}

if (parentPort) void run(workerData as ArchiveWorkerData);
