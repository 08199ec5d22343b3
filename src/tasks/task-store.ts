import type { ExpressionBuilder, Insertable, Kysely, Selectable, Updateable } from 'kysely';
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
  constructor(private readonly db: Kysely<Tables>) {}

  async insert(row: Insertable<TasksTable>): Promise<void> {
    await this.db.insertInto('tasks').values(row).execute();
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

  /** Applies `patch` while the execution `claim` still owns the running task; false when it no longer does. */
  updateOwned(id: string, claim: string, patch: Updateable<TasksTable>): Promise<boolean> {
    return this.updateClaimed(id, claim, 'running', patch);
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
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('tasks')
      .set(patch)
      .where('id', '=', id)
      .where('claim', '=', claim)
      .where('status', '=', status)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Marks a running task cancelled; false when it was not running. */
  async cancel(id: string, at: string): Promise<boolean> {
    const result = await this.db
      .updateTable('tasks')
      .set({ status: 'cancelled', cancelled_at: at, updated_at: at, lease_until: null })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Renews the leases of the given executions; returns the claims that no longer own a running task. */
  async renew(claims: string[], until: string, now: string): Promise<string[]> {
    if (claims.length === 0) return [];
    await this.db
      .updateTable('tasks')
      .set({ lease_until: until, updated_at: now })
      .where('claim', 'in', claims)
      .where('status', '=', 'running')
      .execute();
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
    return this.db.transaction().execute(async (trx) => {
      const logs = await trx.deleteFrom('task_logs').where('task_id', 'in', ids).executeTakeFirst();
      const tasks = await trx.deleteFrom('tasks').where('id', 'in', ids).executeTakeFirst();
      return { tasks: Number(tasks.numDeletedRows), logs: Number(logs.numDeletedRows) };
    });
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
