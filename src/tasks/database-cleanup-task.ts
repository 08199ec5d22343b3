import type { Kysely } from 'kysely';
import type { PlatformConfig } from '../config/config-schema.js';
import type { BulkWrites } from '../storage/bulk-writes.js';
import type { Tables } from '../storage/tables.js';
import type { Scheduler } from './scheduler.js';
import type { TaskContext, TaskRunner } from './task-runner.js';
import type { TaskStore } from './task-store.js';

export const DATABASE_CLEANUP = 'database_cleanup';
const BATCH = 500;

/**
 * The `database_cleanup` task: deletes sessions past their expiry (with their refresh tokens, which die with
 * them) and finished tasks older than `tasks.retention_days`, in batches, reporting real progress. It is
 * scheduled by `tasks.cleanup_schedule` (daily by default).
 */
export function registerDatabaseCleanup(deps: {
  tasks: TaskRunner;
  scheduler: Scheduler;
  store: TaskStore;
  db: Kysely<Tables>;
  /** How its batches commit (bulkWrites: on SQLite, synced off the server's thread). */
  writes: BulkWrites;
  cfg: () => PlatformConfig;
  reportError: (err: unknown) => void;
}): void {
  const { tasks, db } = deps;

  tasks.registerType(
    DATABASE_CLEANUP,
    async (task: TaskContext) => {
      const now = new Date().toISOString();
      const retentionDays = Number(task.details['retention_days'] ?? deps.cfg().tasks.retention_days);
      const cutoff = new Date(Date.now() - retentionDays * 86_400_000).toISOString();
      task.setDetails({ sessions_expired_before: now, tasks_finished_before: cutoff });

      const sessionsDue = await countExpiredSessions(db, now);
      const tasksDue = await deps.store.countFinishedBefore(cutoff);
      const total = Math.max(1, sessionsDue + tasksDue);
      task.log('info', `${sessionsDue} expired sessions and ${tasksDue} finished tasks to delete`);
      let done = 0;

      task.step('sessions', 'running');
      let sessions = 0;
      let refreshTokens = 0;
      for (;;) {
        task.signal.throwIfAborted();
        const ids = (
          await db.selectFrom('sessions').select('id').where('expires_at', '<', now).limit(BATCH).execute()
        ).map((r) => r.id);
        if (ids.length === 0) break;
        const deleted = await deps.writes.transaction(async (trx) => {
          const tokens = await trx
            .deleteFrom('refresh_tokens')
            .where('session_id', 'in', ids)
            .executeTakeFirst();
          const rows = await trx.deleteFrom('sessions').where('id', 'in', ids).executeTakeFirst();
          return { tokens: Number(tokens.numDeletedRows), sessions: Number(rows.numDeletedRows) };
        });
        await deps.writes.sync();
        sessions += deleted.sessions;
        refreshTokens += deleted.tokens;
        done += deleted.sessions;
        task.progress(Math.min(0.99, done / total), 'sessions');
      }
      task.step('sessions', 'completed');
      task.log('info', `deleted ${sessions} expired sessions and ${refreshTokens} refresh tokens`);

      task.step('tasks', 'running');
      let oldTasks = 0;
      let taskLogs = 0;
      for (;;) {
        task.signal.throwIfAborted();
        const deleted = await deps.store.deleteFinishedBefore(cutoff, BATCH);
        if (deleted.tasks === 0) break;
        oldTasks += deleted.tasks;
        taskLogs += deleted.logs;
        done += deleted.tasks;
        task.progress(Math.min(0.99, done / total), 'tasks');
      }
      task.step('tasks', 'completed');
      task.log('info', `deleted ${oldTasks} finished tasks older than ${retentionDays} days`);
      return {
        sessions_deleted: sessions,
        refresh_tokens_deleted: refreshTokens,
        tasks_deleted: oldTasks,
        task_logs_deleted: taskLogs,
      };
    },
    { steps: ['sessions', 'tasks'] },
  );

  try {
    deps.scheduler.schedule(
      DATABASE_CLEANUP,
      deps.cfg().tasks.cleanup_schedule,
      async () => {
        await tasks.start(DATABASE_CLEANUP, { retention_days: deps.cfg().tasks.retention_days });
      },
      { description: 'Deletes expired sessions and old finished tasks' },
    );
  } catch (err) {
    // A bad expression in the config must not stop the platform; it shows in the scheduler's recent errors.
    deps.reportError(err);
  }
}

async function countExpiredSessions(db: Kysely<Tables>, now: string): Promise<number> {
  const row = await db
    .selectFrom('sessions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('expires_at', '<', now)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
