import type { TaskRunner } from '../tasks/task-runner.js';
import { settleOrphans } from './backup-housekeeping.js';
import type { BackupStore } from './backup-store.js';
import { type InterruptedRestoreDeps, recoverInterruptedRestore } from './interrupted-restore.js';
import { readRestoreMarker } from './restore-marker.js';

export interface BackupRecoveryDeps extends InterruptedRestoreDeps {
  store: BackupStore;
  tasks: Pick<TaskRunner, 'get'>;
  /** Takes the backup lock; undefined while a backup or restore holds it anywhere. */
  acquire: () => Promise<(() => Promise<void>) | undefined>;
}

/**
 * Settles what a process that died during a backup or restore left behind: catalogue rows left `running`, work
 * files, and the maintenance mode of an interrupted restore. Runs at start, then every lock lease on every
 * instance, so the work of an instance that never comes back is settled by the others too. It takes the lock
 * only when something is left over, and gets it only while no backup or restore runs anywhere.
 */
export class BackupRecovery {
  private timer: NodeJS.Timeout | undefined;
  private active = false;

  constructor(private readonly deps: BackupRecoveryDeps) {}

  async start(): Promise<void> {
    this.active = true;
    // A failure here must not keep the platform from starting: the next pass retries.
    await this.check(true).catch((err: unknown) => this.failed(err));
    this.arm();
  }

  stop(): void {
    this.active = false;
    clearTimeout(this.timer);
  }

  /**
   * One pass. `atStart` also clears work files when no row is left `running` (a crash can leave files only).
   * A restore counts as interrupted once its task is no longer `running`: the task runner fails it when its
   * instance stops renewing the task's lease.
   */
  async check(atStart: boolean): Promise<void> {
    const marker = await readRestoreMarker(this.deps.systemState);
    const restoreEnded = marker !== undefined && !(await this.taskRunning(marker.restore_id));
    const orphans = (await this.deps.store.running()).length > 0;
    if (!atStart && !restoreEnded && !orphans) return;
    const release = await this.deps.acquire();
    if (!release) return;
    try {
      await settleOrphans(this.deps.store, this.deps.cfg());
      if (!marker || !restoreEnded) return;
      // Read again under the lock: another instance may have settled it, or a new restore begun meanwhile.
      const current = await readRestoreMarker(this.deps.systemState);
      if (current?.restore_id !== marker.restore_id || (await this.taskRunning(current.restore_id))) return;
      await recoverInterruptedRestore(this.deps, current);
    } finally {
      await release();
    }
  }

  private async taskRunning(id: string): Promise<boolean> {
    return (await this.deps.tasks.get(id))?.status === 'running';
  }

  private arm(): void {
    if (!this.active) return;
    this.timer = setTimeout(() => {
      void this.check(false)
        .catch((err: unknown) => this.failed(err))
        .finally(() => this.arm());
    }, this.deps.cfg().backups.lock_lease_seconds * 1000);
    this.timer.unref();
  }

  private failed(err: unknown): void {
    this.deps.log.error({ err }, 'settling an interrupted backup or restore failed; retrying');
  }
}
