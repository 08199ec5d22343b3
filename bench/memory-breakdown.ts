/**
 * Where another process's resident memory is, read from /proc (Linux) so that the process measured does no work
 * for it: `/proc/<pid>/status` (VmRSS, RssAnon, RssFile, RssShmem) and `/proc/<pid>/smaps`, whose anonymous
 * mappings are split into the main thread's malloc arena (`[heap]`: better-sqlite3's writer connection and its
 * page cache, Node's own native allocations), the other threads' malloc arenas (glibc maps each in a region
 * aligned to 64 MiB: the SQLite reader threads' connections and caches, the WAL checkpointer's, libuv's pool)
 * and the rest (V8's heaps of every isolate, thread stacks, other mappings).
 */
import { readFileSync } from 'node:fs';

const KIB = 1024;
const MIB = 1_048_576;
// glibc's HEAP_MAX_SIZE on 64-bit: every non-main arena is a mapping aligned to it.
const ARENA_ALIGN = 64 * MIB;

export interface MemoryBreakdown {
  rss_mb: number;
  anon_mb: number;
  file_mb: number;
  shmem_mb: number;
  threads: number;
  /** Anonymous: the main thread's malloc arena (`[heap]`). */
  main_arena_mb: number;
  /** Anonymous: other threads' malloc arenas, and how many hold any memory. */
  thread_arenas_mb: number;
  thread_arenas: number;
  /** Anonymous: everything else (V8 heaps of every isolate, stacks, large mallocs mapped on their own). */
  other_anon_mb: number;
}

const round = (n: number) => Math.round(n * 10) / 10;

export function memoryBreakdown(pid: number): MemoryBreakdown {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  let mainArena = 0;
  let threadArenas = 0;
  let arenas = 0;
  let otherAnon = 0;
  let current: { anon: boolean; heap: boolean; arena: boolean } | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (header) {
      const start = Number.parseInt(header[1]!, 16);
      const path = header[4]!.trim();
      current = {
        anon: path === '' || path === '[heap]',
        heap: path === '[heap]',
        arena: path === '' && start % ARENA_ALIGN === 0,
      };
      continue;
    }
    const anon = /^Anonymous:\s+(\d+) kB/.exec(line);
    if (!anon || !current?.anon) continue;
    const bytes = Number(anon[1]) * KIB;
    if (current.heap) mainArena += bytes;
    else if (current.arena) {
      threadArenas += bytes;
      if (bytes > 0) arenas += 1;
    } else otherAnon += bytes;
  }
  return {
    rss_mb: round((field('VmRSS') * KIB) / MIB),
    anon_mb: round((field('RssAnon') * KIB) / MIB),
    file_mb: round((field('RssFile') * KIB) / MIB),
    shmem_mb: round((field('RssShmem') * KIB) / MIB),
    threads: field('Threads'),
    main_arena_mb: round(mainArena / MIB),
    thread_arenas_mb: round(threadArenas / MIB),
    thread_arenas: arenas,
    other_anon_mb: round(otherAnon / MIB),
  };
}
