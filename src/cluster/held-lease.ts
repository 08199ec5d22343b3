import type { SharedState } from './shared-state.js';

export interface LeaseWatcher {
  /** A renewal found the lease already expired: the work goes on, but no longer excludes the others. */
  lost(): void;
  /** A renewal failed (Redis unreachable); the next one retries, and the lease is lost if none succeeds in time. */
  renewalFailed(err: unknown): void;
}

/**
 * Takes the lock `name` as a lease of `leaseMs`, renewed every third of it until the returned function
 * releases it; undefined when another holder has it. Work of any length keeps the lock, yet a process that
 * dies holding it stops renewing, so the others get it `leaseMs` later at most.
 */
export async function holdLease(
  shared: Pick<SharedState, 'tryLease'>,
  name: string,
  leaseMs: number,
  watcher: LeaseWatcher,
): Promise<(() => Promise<void>) | undefined> {
  const lease = await shared.tryLease(name, leaseMs);
  if (!lease) return undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      lease
        .renew()
        .then(
          (kept) => {
            // A renewal that answers after the release finds the key gone: that is not a loss.
            if (kept || stopped) return;
            stopped = true;
            watcher.lost();
          },
          (err: unknown) => watcher.renewalFailed(err),
        )
        .finally(() => {
          if (!stopped) arm();
        });
    }, leaseMs / 3);
    // The lease must not keep a stopping process alive; the work it guards does that.
    timer.unref();
  };
  arm();
  let released: Promise<void> | undefined;
  return () => {
    released ??= (async () => {
      stopped = true;
      clearTimeout(timer);
      await lease.release();
    })();
    return released;
  };
}
