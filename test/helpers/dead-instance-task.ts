import { nowIso } from '../../src/kernel/new-id.js';
import type { TestPlatform } from './test-platform.js';

/**
 * A task (`database_cleanup` unless `type` says otherwise) as an instance that died left it: running, claimed by
 * `dead-instance`, its lease running out 300 ms from now (when a live instance may take it over, or resume it
 * when `resumable`).
 */
export async function insertDeadInstanceTask(
  t: TestPlatform,
  task: { id: string; progress: number; details: string; type?: string; resumable?: boolean },
): Promise<void> {
  const now = nowIso();
  await t.platform.context.database.db
    .insertInto('tasks')
    .values({
      id: task.id,
      progress: task.progress,
      details: task.details,
      type: task.type ?? 'database_cleanup',
      status: 'running',
      result: null,
      error: null,
      created_by: 'admin',
      created_at: now,
      started_at: now,
      estimated_completion: null,
      completed_at: null,
      cancelled_at: null,
      updated_at: now,
      resumable: task.resumable ? 1 : 0,
      instance_id: 'dead-instance',
      claim: 'dead-claim',
      lease_until: new Date(Date.now() + 300).toISOString(),
      attempts: 1,
    })
    .execute();
}
