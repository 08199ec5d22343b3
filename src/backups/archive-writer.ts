import { createHash } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { create } from 'tar';
import { encryptingStream } from './archive-cipher.js';
import { MANIFEST_FILE, type Manifest } from './backup-manifest.js';
import { openSyncingFile } from './syncing-file-stream.js';

/**
 * Packs a staged folder into the archive file: `manifest.json` first, then the named top-level folders,
 * as `.tar.gz` (or plain `.tar`), optionally encrypted. Writes to a temporary name and renames at the
 * end, so a half-written archive never carries the final name. Resolves to the file's size and SHA-256.
 * The destination folder is created again if it was removed; a staged file or folder that went missing meanwhile,
 * or a destination that cannot be written, rejects with that error (never an unhandled one).
 */
export async function writeArchive(options: {
  stagingDir: string;
  manifest: Manifest;
  folders: readonly string[];
  file: string;
  compression: boolean;
  encryptionKey?: string | undefined;
  /** Aborting it stops the packing; the partial file is removed. */
  signal?: AbortSignal | undefined;
}): Promise<{ bytes: number; sha256: string }> {
  const { stagingDir, file } = options;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(join(stagingDir, MANIFEST_FILE), `${JSON.stringify(options.manifest, null, 2)}\n`);
  const partial = `${file}.partial`;
  let sink: Writable | undefined;
  try {
    // What is waited for comes before the packing starts: the pack's errors are only listened for from there on.
    const stages = [
      ...(options.compression ? [createGzip()] : []),
      ...(options.encryptionKey ? [await encryptingStream(options.encryptionKey)] : []),
    ];
    // Synced every 8 MB off the loop, and at its end (before it takes its final name): see openSyncingFile.
    sink = await openSyncingFile(partial, { flags: 'wx' });
    const pack = create(
      // portable: no uid/gid/user names of this machine in the archive. tar's own gzip compresses each read on
      // the main thread, synchronously; the archive is compressed by a zlib stream instead (below), on libuv's
      // thread pool. 256 KiB reads (not its 16 MiB default) keep each slice of the packing's own work small, so
      // requests, and the backup lock's renewals, go on between them.
      {
        cwd: stagingDir,
        gzip: false,
        portable: true,
        follow: false,
        maxReadSize: 256 * 1024,
      },
      [MANIFEST_FILE, ...options.folders],
    );
    const hash = createHash('sha256');
    let bytes = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    const source = Readable.from(pack as AsyncIterable<Buffer>, { objectMode: false });
    // tar reports a file it cannot read (the staging folder removed under it) as an 'error' event of the pack, which
    // its async iterator only listens for while a read is waiting: at any other moment, or once the pipeline has
    // stopped reading, the event had no listener and was thrown as an uncaught exception. Every one is listened
    // for; the first fails the pipeline.
    pack.on('error', (err: unknown) => source.destroy(err as Error));
    await pipeline([source, ...stages, measure, sink], {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    await rename(partial, file);
    return { bytes, sha256: hash.digest('hex') };
  } catch (err) {
    sink?.destroy();
    // Not there to remove, or its folder replaced by a file: the archive's own error is the one to report.
    await rm(partial, { force: true }).catch(() => undefined);
    throw err;
  }
}
