/** CPU time of a process, read from /proc (Linux), so that a benchmark can say which side was busy. */
import { readFileSync } from 'node:fs';

// Linux reports /proc/<pid>/stat times in clock ticks of 1/100 s (USER_HZ) on every architecture we run.
const TICKS_PER_SECOND = 100;

/** User plus system CPU seconds used so far by `pid`. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, inside parentheses): utime is the 14th, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}
