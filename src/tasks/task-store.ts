import type { ExpressionBuilder, Insertable, Kysely, Selectable, Updateable } from 'kysely';
import { type BulkWrites, durably, syncedWrites } from '../storage/bulk-writes.js';
import type { Tables } from '../storage/tables.js';
import type { TaskLogsTable, TasksTable } from './task-tables.js';

export type TaskRow = Selectable<TasksTable>;
export type TaskLogRow = Selectable<TaskLogsTable>;
export type TaskStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/**
 * Storage of tasks. Every write by a running execution is conditional on its `claim` and on the task still
 * running, so a cancelled, failed-over or stale execution can never overwrite what happened since.
 */
export class TaskStore {
  constructor(
    private readonly db: Kysely<Tables>,
    /**
     * How a running execution's writes behind (`saveProgress`), lease renewals and the clean-up's deletions
     * commit: on SQLite without syncing on the server's thread (bulkWrites; the first two are never synced
     * by `sync`, the next synced commit or checkpoint takes them to disk).
     */
    private readonly writes: BulkWrites = syncedWrites(db),
  ) {}

  /**
   * A new task's row, on disk when this resolves: on SQLite committed unsynced and the WAL then synced off the
   * server's thread (bulkWrites), as `finish` does. A synced commit there waited for the disk on that thread:
   * 26–70 ms for the purge's task right after a backup (strace of the main thread, 1M events).
   */
  async insert(row: Insertable<TasksTable>): Promise<void> {
    await durably(this.writes, (trx) => trx.insertInto('tasks').values(row).execute());
  }

  findById(id: string): Promise<TaskRow | undefined> {
    return this.db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async list(filter: {
    status?: string | undefined;
    type?: string | undefined;
    limit: number;
    offset: number;
  }): Promise<{ rows: TaskRow[]; total: number }> {
    let query = this.db.selectFrom('tasks');
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.type) query = query.where('type', '=', filter.type);
    const [rows, count] = await Promise.all([
      query
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(filter.limit)
        .offset(filter.offset)
        .execute(),
      query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.n) };
  }

  logs(taskId: string): Promise<TaskLogRow[]> {
    return this.db
      .selectFrom('task_logs')
      .selectAll()
      .where('task_id', '=', taskId)
      .orderBy('timestamp')
      .orderBy('seq')
      .execute();
  }

  async insertLogs(rows: Insertable<TaskLogsTable>[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.insertInto('task_logs').values(rows).execute();
  }

  /**
   * An execution's last write (its final status, or what it leaves for a resume) with its last log lines,
   * while `claim` still owns the task in `status`; false when it no longer does. One transaction, synced off the
   * server's thread on SQLite (bulkWrites): on disk when this resolves, as a synced commit would be.
   */
  async finish(
    id: string,
    claim: string,
    status: 'running' | 'cancelled',
    patch: Updateable<TasksTable>,
    logs: Insertable<TaskLogsTable>[],
  ): Promise<boolean> {
    return durably(this.writes, async (trx) => {
      const written = await this.updateClaimed(id, claim, status, patch, trx);
      if (logs.length > 0) await trx.insertInto('task_logs').values(logs).execute();
      return written;
    });
  }

  /**
   * A running execution's progress and details with its new log lines (TaskExecution's writes behind, up to ten
   * a second), while `claim` still owns the task; false when it no longer does. One transaction, which on SQLite
   * does not sync on the server's thread (a commit synced there took 4–80 ms on a shared disk): the WAL
   * checkpointer's next pass, within 100 ms, or the next synced commit (the task's final status) takes it to
   * disk; a power loss may take the last moment of progress, which a resumed task redoes from its checkpoint.
   */
  saveProgress(
    id: string,
    claim: string,
    patch: Updateable<TasksTable>,
    logs: Insertable<TaskLogsTable>[],
  ): Promise<boolean> {
    return this.writes.transaction(async (trx) => {
      const owned = await this.updateClaimed(id, claim, 'running', patch, trx);
      if (logs.length > 0) await trx.insertInto('task_logs').values(logs).execute();
      return owned;
    });
  }

  /**
   * The last write of an execution whose task was cancelled meanwhile (its steps and progress as they ended);
   * only while the task is still the cancelled one this execution ran.
   */
  async updateCancelled(id: string, claim: string, patch: Updateable<TasksTable>): Promise<void> {
    await this.updateClaimed(id, claim, 'cancelled', patch);
  }

  private async updateClaimed(
    id: string,
    claim: string,
    status: 'running' | 'cancelled',
    patch: Updateable<TasksTable>,
    db: Kysely<Tables> = this.db,
  ): Promise<boolean> {
    const result = await db
      .updateTable('tasks')
      .set(patch)
      .where('id', '=', id)
      .where('claim', '=', claim)
      .where('status', '=', status)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Marks a running task cancelled; false when it was not running, or no longer cancellable. */
  async cancel(id: string, at: string): Promise<boolean> {
    const result = await this.db
      .updateTable('tasks')
      .set({ status: 'cancelled', cancelled_at: at, updated_at: at, lease_until: null })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where('cancellable', '=', 1)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * Makes the running task this execution owns refuse cancels from now on; false when it no longer owns it
   * (it was cancelled first). One conditional update, so a cancel and this never both win; on disk when this
   * resolves, synced off the server's thread like `insert`.
   */
  async markUncancellable(id: string, claim: string, at: string): Promise<boolean> {
    const result = await durably(this.writes, (trx) =>
      trx
        .updateTable('tasks')
        .set({ cancellable: 0, updated_at: at })
        .where('id', '=', id)
        .where('claim', '=', claim)
        .where('status', '=', 'running')
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) > 0;
  }

  /** Writes `details` of a cancelled task, unless they changed since they were read as `read`. */
  async replaceCancelledDetails(id: string, read: string, details: string): Promise<void> {
    await this.db
      .updateTable('tasks')
      .set({ details })
      .where('id', '=', id)
      .where('status', '=', 'cancelled')
      .where('details', '=', read)
      .execute();
  }

  /** Renews the leases of the given executions; returns the claims that no longer own a running task. */
  async renew(claims: string[], until: string, now: string): Promise<string[]> {
    if (claims.length === 0) return [];
    // Not synced on the server's thread (SQLite): after a power loss every lease has expired anyway.
    await this.writes.transaction((trx) =>
      trx
        .updateTable('tasks')
        .set({ lease_until: until, updated_at: now })
        .where('claim', 'in', claims)
        .where('status', '=', 'running')
        .execute(),
    );
    const live = await this.db
      .selectFrom('tasks')
      .select('claim')
      .where('claim', 'in', claims)
      .where('status', '=', 'running')
      .execute();
    const alive = new Set(live.map((r) => r.claim));
    return claims.filter((c) => !alive.has(c));
  }

  /** Running tasks whose owner stopped renewing its lease before `now`. */
  expired(now: string): Promise<TaskRow[]> {
    return this.db
      .selectFrom('tasks')
      .selectAll()
      .where('status', '=', 'running')
      .where('lease_until', '<', now)
      .orderBy('created_at')
      .limit(500)
      .execute();
  }

  /** Fails a task whose lease expired, unless someone renewed or took it over meanwhile. */
  async failExpired(row: TaskRow, error: string, now: string, details = row.details): Promise<boolean> {
    const result = await this.db
      .updateTable('tasks')
      .set({ status: 'failed', error, details, completed_at: now, updated_at: now, lease_until: null })
      .where('id', '=', row.id)
      .where('status', '=', 'running')
      .where('lease_until', '=', row.lease_until)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Takes over a resumable task whose lease expired; false when another instance got it first. */
  async takeOver(
    row: TaskRow,
    next: { claim: string; instanceId: string; leaseUntil: string; now: string },
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('tasks')
      .set({
        claim: next.claim,
        instance_id: next.instanceId,
        lease_until: next.leaseUntil,
        updated_at: next.now,
        attempts: row.attempts + 1,
      })
      .where('id', '=', row.id)
      .where('status', '=', 'running')
      .where('lease_until', '=', row.lease_until)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async countFinishedBefore(cutoff: string): Promise<number> {
    const row = await this.db
      .selectFrom('tasks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => finishedBefore(eb, cutoff))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Deletes up to `batch` finished tasks (with their logs) that ended before `cutoff`; returns how many. */
  async deleteFinishedBefore(cutoff: string, batch: number): Promise<{ tasks: number; logs: number }> {
    const ids = (
      await this.db
        .selectFrom('tasks')
        .select('id')
        .where((eb) => finishedBefore(eb, cutoff))
        .limit(batch)
        .execute()
    ).map((r) => r.id);
    if (ids.length === 0) return { tasks: 0, logs: 0 };
    const deleted = await this.writes.transaction(async (trx) => {
      const logs = await trx.deleteFrom('task_logs').where('task_id', 'in', ids).executeTakeFirst();
      const tasks = await trx.deleteFrom('tasks').where('id', 'in', ids).executeTakeFirst();
      return { tasks: Number(tasks.numDeletedRows), logs: Number(logs.numDeletedRows) };
    });
    await this.writes.sync();
    return deleted;
  }

  /** Deletes one task and its logs (diagnostics' own probe tasks). */
  async delete(id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('task_logs').where('task_id', '=', id).execute();
      await trx.deleteFrom('tasks').where('id', '=', id).execute();
    });
  }
}

/** Completed or failed before `cutoff`, or cancelled before it. */
function finishedBefore(eb: ExpressionBuilder<Tables, 'tasks'>, cutoff: string) {
  return eb.or([
    eb.and([eb('status', 'in', ['completed', 'failed']), eb('completed_at', '<', cutoff)]),
    eb.and([eb('status', '=', 'cancelled'), eb('cancelled_at', '<', cutoff)]),
  ]);
}
