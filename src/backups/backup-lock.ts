import type { FastifyBaseLogger } from 'fastify';
import { holdLease } from '../cluster/held-lease.js';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';

const LOCK = 'backups';

/**
 * One backup, restore or import at a time across the cluster: a lease of `backups.lock_lease_seconds` renewed
 * while the operation runs, so a process that dies holding it blocks the others for one lease at most. A local
 * flag beside it means that, should the lease ever expire under a running operation (a stalled process), this
 * instance still never starts a second one, nor settles its own work as left over.
 */
export class BackupLock {
  private busy = false;

  constructor(
    private readonly deps: {
      shared: Pick<SharedState, 'tryLease'>;
      cfg: () => PlatformConfig;
      log: FastifyBaseLogger;
    },
  ) {}

  /** The release function; @throws AppError BACKUP_IN_PROGRESS when it is held here or on another instance. */
  async acquire(): Promise<() => Promise<void>> {
    const release = await this.tryAcquire();
    if (!release) throw new AppError('BACKUP_IN_PROGRESS');
    return release;
  }

  /** The release function, or undefined while it is held here or on another instance. */
  async tryAcquire(): Promise<(() => Promise<void>) | undefined> {
    if (this.busy) return undefined;
    this.busy = true;
    let release: (() => Promise<void>) | undefined;
    try {
      release = await holdLease(this.deps.shared, LOCK, this.deps.cfg().backups.lock_lease_seconds * 1000, {
        lost: () =>
          this.deps.log.error(
            'the backup lock expired before it could be renewed; another backup or restore may start meanwhile',
          ),
        renewalFailed: (err) => this.deps.log.warn({ err }, 'renewing the backup lock failed; retrying'),
      });
    } finally {
      if (!release) this.busy = false;
    }
    if (!release) return undefined;
    const free = release;
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      this.busy = false;
      await free();
    };
  }
}
