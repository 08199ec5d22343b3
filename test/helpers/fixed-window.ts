/**
 * Rate-limit counters live in fixed windows of the clock (`window_seconds`, aligned to multiples of it): a
 * window that ends while a test spends a limit resets its count, and the test sees a request allowed that
 * should have been refused. When the current window of `windowSeconds` ends within `marginMs`, this waits
 * until the next one has begun, so a test that takes less than `marginMs` runs inside one window.
 */
export async function insideOneWindow(windowSeconds: number, marginMs: number): Promise<void> {
  const windowMs = windowSeconds * 1000;
  const left = windowMs - (Date.now() % windowMs);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
