import { performance } from 'node:perf_hooks';

const round = (n: number) => Math.round(n * 100) / 100;

/** Nearest-rank percentiles and mean of durations in ms. */
export function latencyFigures(samplesMs: number[]) {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? 0;
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    samples: sorted.length,
    avg_ms: sorted.length === 0 ? 0 : round(sum / sorted.length),
    p50_ms: round(at(0.5)),
    p95_ms: round(at(0.95)),
    max_ms: round(sorted[sorted.length - 1] ?? 0),
  };
}

/** Runs `fn` and returns how long it took in ms. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/**
 * Runs `op` `total` times, `concurrency` at a time, until done or `signal` aborts (the time bound).
 * Returns each successful operation's duration, the error count (with up to five messages), and the wall time.
 */
export async function burst(
  total: number,
  concurrency: number,
  signal: AbortSignal,
  op: (i: number) => Promise<unknown>,
): Promise<{ durationsMs: number[]; errors: number; messages: string[]; wallMs: number; attempted: number }> {
  const durationsMs: number[] = [];
  const messages: string[] = [];
  let errors = 0;
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < total && !signal.aborted) {
      const i = next++;
      try {
        durationsMs.push(await timed(() => op(i)));
      } catch (err) {
        errors += 1;
        if (messages.length < 5) messages.push(err instanceof Error ? err.message : String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, total)) }, worker));
  return { durationsMs, errors, messages, wallMs: performance.now() - start, attempted: next };
}

export { round };
