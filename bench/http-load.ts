/** Fixed-time autocannon runs (this process is the load generator; the servers run in others). */
import autocannon from 'autocannon';
import { cpuSeconds } from './process-cpu.js';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  requests: number;
  /** The server's own CPU time per request in µs, over its measured rounds (null without its `pid`). */
  server_cpu_us: number | null;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** The server's process, whose CPU time is read (from /proc) around each of its measured rounds. */
  pid?: number | undefined;
  connections: number;
  duration: number;
}

const run = (options: Omit<LoadOptions, 'duration' | 'connections'>, duration: number, connections: number) =>
  autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
    connections,
    duration,
  });

/**
 * Several targets measured in turns — one second each, round after round, `duration` seconds each in all —
 * so that a slow spell of a shared host falls on all of them alike instead of on whichever ran then. The rate
 * is every request of a target over its seconds; p50 and p99 are the medians of its rounds'.
 */
export async function httpLoadInTurns(
  targets: Array<Omit<LoadOptions, 'duration' | 'connections'>>,
  options: { connections: number; duration: number },
): Promise<LoadResult[]> {
  for (const target of targets) await run({ ...target, ...options }, 1, Math.min(8, options.connections));
  const rounds = targets.map(() => [] as autocannon.Result[]);
  const cpu = targets.map(() => 0);
  for (let round = 0; round < Math.max(1, Math.round(options.duration)); round++) {
    for (const [i, target] of targets.entries()) {
      const before = target.pid === undefined ? 0 : cpuSeconds(target.pid);
      rounds[i]!.push(await run({ ...target, ...options }, 1, options.connections));
      if (target.pid !== undefined) cpu[i]! += cpuSeconds(target.pid) - before;
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return rounds.map((results, i) => {
    const requests = results.reduce((n, r) => n + r.requests.total, 0);
    const seconds = results.reduce((n, r) => n + r.duration, 0);
    return {
      rps: Math.round(requests / seconds),
      p50: median(results.map((r) => r.latency.p50)),
      p99: median(results.map((r) => r.latency.p99)),
      non2xx: results.reduce((n, r) => n + r.non2xx, 0),
      errors: results.reduce((n, r) => n + r.errors, 0),
      requests,
      server_cpu_us:
        targets[i]!.pid === undefined || requests === 0 ? null : Math.round((cpu[i]! * 1e6) / requests),
    };
  });
}
