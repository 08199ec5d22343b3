import type { IdempotencyStore } from '../storage/idempotency-store.js';
import type { Scheduler } from '../tasks/scheduler.js';

export const IDEMPOTENCY_KEYS_CLEANUP = 'idempotency_keys_cleanup';
/** Every ten minutes, so the table holds little more than the keys of the last `idempotency_ttl_seconds`. */
const SCHEDULE = '*/10 * * * *';
/** Rows per delete: each is a short statement, so a backlog never holds the (SQLite) writer for long. */
const BATCH = 500;

/** Deletes expired idempotency keys in batches; resolves to how many it deleted. */
export async function deleteExpiredIdempotencyKeys(
  store: IdempotencyStore,
  signal?: AbortSignal,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const n = await store.deleteExpired(BATCH);
    deleted += n;
    if (n < BATCH || signal?.aborted) return deleted;
    // Lets the requests queued behind this batch run before the next one.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The recurring job that keeps the key table bounded; in a cluster one instance runs each occurrence. */
export function scheduleIdempotencyKeysCleanup(scheduler: Scheduler, store: IdempotencyStore): void {
  scheduler.schedule(
    IDEMPOTENCY_KEYS_CLEANUP,
    SCHEDULE,
    async ({ signal }) => {
      await deleteExpiredIdempotencyKeys(store, signal);
    },
    { description: 'Deletes the Idempotency-Keys whose answers are past server.idempotency_ttl_seconds' },
  );
}
