/**
 * Polls `check` every 25 ms until it holds or `deadlineMs` passes, then answers whether it held. For changes
 * that reach other instances asynchronously (Redis pub/sub); never a fixed sleep.
 */
export async function eventually(check: () => Promise<boolean>, deadlineMs = 5000): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}
