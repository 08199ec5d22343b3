/**
 * PostgreSQL aborts one of two transactions that wait on each other (deadlock, 40P01) or that cannot be
 * serialized (40001); running the loser again is the documented remedy. SQLite has one writer and never
 * raises these.
 */
export function isConflictAbort(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

/** Runs `work`, again (up to `attempts` times in all) when PostgreSQL aborted it for a conflict. */
export async function retryOnConflict<T>(work: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (err) {
      if (i >= attempts || !isConflictAbort(err)) throw err;
      await new Promise((r) => setTimeout(r, 10 * i + Math.random() * 20));
    }
  }
}
