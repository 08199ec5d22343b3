import { open } from 'node:fs/promises';

/**
 * Flushes a WAL file to disk on libuv's thread pool, so the event loop goes on meanwhile. A commit made with
 * `synchronous = NORMAL` has written its frames to the file (the operating system's cache) without syncing
 * them; once this resolves they are on disk, as a `synchronous = FULL` commit's would be — every commit made
 * before the call, by any connection (fsync is per file, whatever descriptor asks for it). A new descriptor
 * every time, so a WAL file that was ever replaced is never synced through a stale one.
 */
export async function syncWalFile(walPath: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(walPath, 'r');
  } catch (err) {
    // No WAL file: nothing was written since the last checkpoint truncated it away.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}
