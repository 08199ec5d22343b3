import { performance } from 'node:perf_hooks';

/**
 * Polls `check` every 25 ms until it holds or `deadlineMs` passes, then answers whether it held. For changes
 * that arrive asynchronously (Redis pub/sub, background writes); never a fixed sleep. The deadline is kept with
 * performance.now(), so tests that fake the date do not stall it.
 */
export async function eventually(check: () => Promise<boolean>, deadlineMs = 5000): Promise<boolean> {
  const end = performance.now() + deadlineMs;
  while (performance.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}
