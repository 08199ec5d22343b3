import { rm } from 'node:fs/promises';
import { workerEntry } from '../kernel/worker-entry.js';
import { type ArchiveOptions, partialFile } from './archive-writer.js';
import type { ArchiveWorkerData, ArchiveWritten } from './archive-writer-worker.js';
import { runBackupWorker } from './backup-worker.js';

// Built, `archive-writer-worker.js` beside this module; from the sources, the TypeScript entry bundled (tar
// with it) as an IIFE for an `eval` worker, as the table dump's (dump-in-worker.ts).
const ENTRY = workerEntry('archive-writer-worker', import.meta.url, { format: 'iife' });

/**
 * The packing streams a file at a time through 256 KiB reads, the compressor, the cipher and the hash: a few
 * megabytes of buffers at once, whatever the archive's size. A small heap keeps what it adds to the process
 * small; its young generation is capped too, so the buffers' garbage is collected early.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 };

/**
 * `writeArchive` in a worker thread (archive-writer-worker): tar's packing of the staged files (reads, headers,
 * the stream's buffers), the compression's callbacks, the encryption and the hashing of every byte take no
 * turns of the event loop, which only receives the result. Aborting `signal` terminates the worker, removes the
 * partial file and rejects with the signal's reason; a failure in the worker rejects with an error of the same
 * message (and code), its partial file removed by the worker as on this thread.
 */
export async function archiveInWorker(options: ArchiveOptions): Promise<ArchiveWritten> {
  const { signal, ...data } = options;
  signal?.throwIfAborted();
  const program = await ENTRY();
  const workerData: ArchiveWorkerData = data;
  try {
    return await runBackupWorker<ArchiveWritten, never>(program, {
      workerData,
      resourceLimits: WORKER_LIMITS,
      signal,
    });
  } catch (err) {
    // Terminated midway (aborted, or out of memory): what it had written is left under the partial name.
    await rm(partialFile(options.file), { force: true });
    throw err;
  }
}
