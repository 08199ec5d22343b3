import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();

describe('database_cleanup task', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ tasks: { retention_days: 30 } });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('deletes expired sessions with their refresh tokens and finished tasks past retention, and nothing else', async () => {
    const db = t.platform.context.database.db;
    const token = await t.adminToken();
    const admin = await db
      .selectFrom('users')
      .select('id')
      .where('username', '=', 'admin')
      .executeTakeFirstOrThrow();
    for (const [id, expires] of [
      ['ses_expired1', daysAgo(1)],
      ['ses_expired2', daysAgo(10)],
      ['ses_live', new Date(Date.now() + 86_400_000).toISOString()],
    ] as const) {
      await db
        .insertInto('sessions')
        .values({
          id,
          user_id: admin.id,
          device: 'test',
          ip_address: '127.0.0.1',
          created_at: daysAgo(40),
          last_activity: daysAgo(2),
          expires_at: expires,
          revoked_at: null,
          revoked_reason: null,
        })
        .execute();
      await db
        .insertInto('refresh_tokens')
        .values({ token_hash: `hash-${id}`, session_id: id, created_at: daysAgo(40), used_at: null })
        .execute();
    }
    const task = (id: string, status: string, ended: string) => ({
      id,
      type: 'test_old',
      status,
      progress: 1,
      details: '{}',
      result: null,
      error: null,
      created_by: null,
      created_at: ended,
      started_at: ended,
      estimated_completion: null,
      completed_at: status === 'cancelled' ? null : ended,
      cancelled_at: status === 'cancelled' ? ended : null,
      updated_at: ended,
      resumable: 0,
      instance_id: null,
      claim: null,
      lease_until: null,
      attempts: 1,
    });
    await db
      .insertInto('tasks')
      .values([
        task('task_old_completed', 'completed', daysAgo(45)),
        task('task_old_failed', 'failed', daysAgo(31)),
        task('task_old_cancelled', 'cancelled', daysAgo(60)),
        task('task_recent', 'completed', daysAgo(5)),
      ])
      .execute();
    await db
      .insertInto('task_logs')
      .values({
        id: 'tlg_old',
        task_id: 'task_old_completed',
        seq: 0,
        timestamp: daysAgo(45),
        level: 'INFO',
        message: 'old',
      })
      .execute();

    const started = await t.platform.context.tasks.start('database_cleanup', {});
    const done = await t.platform.context.tasks.settled(started.id);
    expect(done).toMatchObject({
      status: 'completed',
      progress: 1,
      result: { sessions_deleted: 2, refresh_tokens_deleted: 2, tasks_deleted: 3, task_logs_deleted: 1 },
      details: {
        steps: [
          { name: 'sessions', status: 'completed', progress: 1 },
          { name: 'tasks', status: 'completed', progress: 1 },
        ],
      },
    });
    const sessions = (await db.selectFrom('sessions').select('id').execute()).map((r) => r.id);
    expect(sessions).toContain('ses_live');
    expect(sessions).not.toContain('ses_expired1');
    expect(sessions).not.toContain('ses_expired2');
    const tokens = (await db.selectFrom('refresh_tokens').select('session_id').execute()).map(
      (r) => r.session_id,
    );
    expect(tokens).not.toContain('ses_expired1');
    expect(tokens).toContain('ses_live');
    const tasks = (await db.selectFrom('tasks').select('id').execute()).map((r) => r.id);
    expect(tasks).toEqual(expect.arrayContaining(['task_recent', started.id]));
    expect(tasks).not.toContain('task_old_completed');
    // The admin's own login session is alive and keeps working.
    expect((await t.request('GET', '/api/v1/auth/me', { token })).statusCode).toBe(200);
  });
});
