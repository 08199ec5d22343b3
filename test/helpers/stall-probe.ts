import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface Stall {
  /** ms since the probe started */
  at: number;
  /** Wall time between two probe turns beyond the 1 ms asked for. */
  gapMs: number;
  /** CPU this thread used meanwhile (Linux: /proc/thread-self/schedstat; elsewhere the whole process's). */
  cpuMs: number;
  /** How long the event loop was held by work: the smaller of the two (see startStallProbe). */
  heldMs: number;
  /**
   * How long the event loop was held, waits inside a system call included: the gap less the time this thread
   * waited for a core (Linux: schedstat's run delay; elsewhere the gap itself). A sync of a file on the
   * loop uses no CPU (`cpuMs` misses it) but holds the loop all the same.
   */
  wallHeldMs: number;
}

/**
 * Measures how long the event loop of this process is held at a time: a timer asks to run every millisecond,
 * and each turn notes the wall time since the last one and the CPU the process used meanwhile. On a shared,
 * loaded host the wall gap alone also counts the time the operating system gave the core to other processes
 * (hundreds of ms at a load of 10 on two cores); a loop held by our own work uses CPU all along, so the CPU
 * the event loop's thread used within the gap (capped by the gap) is what the work held. On Linux that is the
 * thread's own run time (`/proc/thread-self/schedstat`, in ns); elsewhere the process's CPU, which also counts
 * what its other threads (SQLite readers, the WAL checkpointer, the garbage collector's helpers) did meanwhile.
 * `wallHeldMs` also counts the time the thread slept inside a call (waiting for the disk): the gap less what
 * it spent waiting for a core.
 */
export function startStallProbe(): { stop(): Stall[] } {
  const started = performance.now();
  const stalls: Stall[] = [];
  let last = started;
  let lastTimes = threadTimes();
  let timer: NodeJS.Timeout | undefined;
  const turn = () => {
    const now = performance.now();
    const times = threadTimes();
    const gapMs = now - last - 1;
    const cpuMs = times.cpuMs - lastTimes.cpuMs;
    const heldMs = Math.max(0, Math.min(gapMs, cpuMs));
    const wallHeldMs = Math.max(0, gapMs - (times.waitMs - lastTimes.waitMs));
    if (heldMs > 2 || wallHeldMs > 2) {
      stalls.push({ at: Math.round(last - started), gapMs, cpuMs, heldMs, wallHeldMs });
    }
    last = now;
    lastTimes = threadTimes();
    timer = setTimeout(turn, 1);
  };
  timer = setTimeout(turn, 1);
  return {
    stop: () => {
      clearTimeout(timer);
      return stalls;
    },
  };
}

let schedstat = true;

/**
 * CPU time of the calling thread and the time it waited for a core, in ms (Linux); elsewhere the whole
 * process's CPU and no wait.
 */
function threadTimes(): { cpuMs: number; waitMs: number } {
  if (schedstat) {
    try {
      const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
      return { cpuMs: Number(run) / 1e6, waitMs: Number(wait) / 1e6 };
    } catch {
      schedstat = false;
    }
  }
  const { user, system } = process.cpuUsage();
  return { cpuMs: (user + system) / 1000, waitMs: 0 };
}
