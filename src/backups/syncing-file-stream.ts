import { open } from 'node:fs/promises';
import { Writable } from 'node:stream';

/** How much written data may wait for the disk before the file is synced. */
const SYNC_EVERY_BYTES = 8 * 1024 * 1024;

export interface SyncingFileOptions {
  /** As `fs.open`'s; default `w`. */
  flags?: string;
  syncEvery?: number;
  /** Syncs what is left once more at the end, so the file is on disk when the stream finishes (default true). */
  syncAtEnd?: boolean;
}

/**
 * Opens a stream into a file that syncs its data to disk every `syncEvery` bytes (`FileHandle.datasync`, on
 * libuv's thread pool, while writing goes on). Written to the operating system's cache alone, a backup's files
 * left hundreds of megabytes of dirty pages behind them, and an fsync made meanwhile on the server's thread (a
 * synced SQLite commit: ext4 commits its journal in order with data written before) could wait for them. At
 * most one sync runs at a time, so what waits for the disk stays under about two intervals. Opened before it is
 * returned, so a file that cannot be opened rejects here, never as an unhandled 'error' of the stream.
 */
export async function openSyncingFile(file: string, options: SyncingFileOptions = {}): Promise<Writable> {
  const syncEvery = options.syncEvery ?? SYNC_EVERY_BYTES;
  const handle = await open(file, options.flags ?? 'w');
  let unsynced = 0;
  let syncing: Promise<void> = Promise.resolve();

  const write = async (chunk: Buffer) => {
    for (let offset = 0; offset < chunk.length; ) {
      offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten;
    }
    unsynced += chunk.length;
    if (unsynced < syncEvery) return;
    unsynced = 0;
    await syncing;
    syncing = handle.datasync();
    // Its failure is reported by the next write that waits for it, or by the end; never as an unhandled one.
    syncing.catch(() => {});
  };

  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      write(chunk).then(() => done(), done);
    },
    writev(chunks, done) {
      write(Buffer.concat(chunks.map((c) => c.chunk as Buffer))).then(() => done(), done);
    },
    final(done) {
      syncing
        .then(() => (options.syncAtEnd === false ? undefined : handle.datasync()))
        .then(() => done(), done);
    },
    destroy(err, done) {
      syncing
        .catch(() => {})
        .then(() => handle.close())
        .then(
          () => done(err),
          (closeErr: Error) => done(err ?? closeErr),
        );
    },
  });
}
