import { readFileSync } from 'node:fs';

/**
 * Bytes passed to write calls so far (Linux's `wchar`): by the calling thread (the server's event loop, in a
 * test) with `'thread'`, by the whole process with `'process'`. A commit's WAL frames count for the thread that
 * commits them.
 */
export function bytesWritten(by: 'thread' | 'process'): number {
  const line = readFileSync(by === 'thread' ? '/proc/thread-self/io' : '/proc/self/io', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('wchar:'));
  return Number(line?.split(/\s+/)[1] ?? 0);
}
