import { setTimeout as sleep } from 'node:timers/promises';
import { holdLease } from '../cluster/held-lease.js';
import type { SharedState } from '../cluster/shared-state.js';
import { AppError } from '../http/app-error.js';

// Renewed while held, so an instance that dies mid-change frees the plugin within this time.
const LEASE_MS = 15_000;
const POLL_MS = 50;

export interface LifecycleLockOptions {
  /** How long to wait for a change of the same plugin on another instance to finish. */
  waitMs: number;
  /** A renewal found the lease gone, or failed: the change goes on but may no longer exclude the others. */
  onLost: (err: Error) => void;
}

/**
 * Runs `fn` while holding the cluster-wide lock of one plugin's lifecycle, so that changes of the same plugin
 * made on two instances at once (install, enable, disable, configure, update, uninstall, putting it in error)
 * run one after the other instead of interleaving their writes.
 *
 * @throws AppError RESOURCE_CONFLICT when the lock is not free within `waitMs`
 */
export async function withLifecycleLock<T>(
  shared: Pick<SharedState, 'tryLease'>,
  id: string,
  options: LifecycleLockOptions,
  fn: () => Promise<T>,
): Promise<T> {
  const name = `plugins:lifecycle:${id}`;
  const deadline = Date.now() + options.waitMs;
  const watcher = {
    lost: () => options.onLost(new Error(`the lifecycle lock of plugin ${id} expired while held`)),
    renewalFailed: (err: unknown) => options.onLost(err instanceof Error ? err : new Error(String(err))),
  };
  let release = await holdLease(shared, name, LEASE_MS, watcher);
  while (!release) {
    if (Date.now() >= deadline) {
      throw new AppError(
        'RESOURCE_CONFLICT',
        `Another change of the plugin '${id}' is still running; try again later`,
        { details: { plugin: id } },
      );
    }
    await sleep(POLL_MS);
    release = await holdLease(shared, name, LEASE_MS, watcher);
  }
  try {
    return await fn();
  } finally {
    await release().catch((err: unknown) => options.onLost(err as Error));
  }
}
