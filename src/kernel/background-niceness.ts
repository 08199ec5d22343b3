import { setPriority } from 'node:os';

/**
 * How much lower than the server's thread the CPU priority of a background thread is (nice 10 of 19): the
 * SQLite reader threads, the bulk writer's and the backup's dump worker. On Linux a thread has a niceness of
 * its own, so when both want the same core the thread that answers requests gets it, and a long read, a
 * purge's chunk or a backup's dump gives way instead of delaying every request on a small machine.
 */
export const BACKGROUND_NICENESS = 10;

/** Lowers the calling thread's priority to BACKGROUND_NICENESS where the system allows it. */
export function lowerThreadPriority(): void {
  try {
    setPriority(0, BACKGROUND_NICENESS);
  } catch {
    // Not permitted or not supported: the thread runs at the process's priority.
  }
}
