import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('user analytics', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    const db = t.platform.context.database.db;
    // Two users that existed long before the period, one of them suspended.
    const old = new Date(Date.now() - 45 * 86_400_000).toISOString();
    for (const name of ['veteran-one', 'veteran-two']) {
      const u = await t.createUser(name);
      await db.updateTable('users').set({ created_at: old }).where('id', '=', u.id).execute();
    }
    const veteran = await db
      .selectFrom('users')
      .select('id')
      .where('username', '=', 'veteran-two')
      .executeTakeFirstOrThrow();
    await t.request('POST', `/api/v1/admin/users/${veteran.id}/suspend`, {
      token: admin,
      body: { reason: 'x' },
    });
    // Two new ones in the period; one never logs in.
    await t.createUser('newcomer', ['moderator']);
    await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: { username: 'silent-newcomer', email: 'silent@example.test', password: 'long-enough-1' },
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('counts totals, activity, new users and growth from the users table', async () => {
    const res = await t.request('GET', '/api/v1/admin/analytics/users?period=30d&group_by=day', {
      token: admin,
    });
    expect(res.statusCode).toBe(200);
    const { summary, demographics, timeline } = res.data.data;
    // admin + 2 veterans + 2 newcomers; admin was created at start (inside the period).
    expect(summary.total_users).toBe(5);
    expect(summary.new_users_this_period).toBe(3);
    // admin, both veterans and the newcomer logged in (createUser logs in); the silent newcomer did not.
    expect(summary.active_users).toBe(4);
    expect(summary.growth_rate).toBe(1.5);
    expect(demographics.by_status).toEqual({ active: 4, inactive: 0, suspended: 1 });
    expect(demographics.by_role).toEqual({ admin: 1, user: 3, moderator: 1 });

    expect(timeline.length).toBeGreaterThanOrEqual(30);
    const today = new Date().toISOString().slice(0, 10);
    const last = timeline.at(-1);
    expect(last).toEqual({ date: today, new_users: 3, active_users: 4, total_users: 5 });
    expect(timeline[0].total_users).toBe(2);
    expect(timeline.reduce((n: number, b: { new_users: number }) => n + b.new_users, 0)).toBe(3);
  });

  it('groups the timeline by week and month, and narrows the summary to 24 hours', async () => {
    const weekly = await t.request('GET', '/api/v1/admin/analytics/users?period=90d&group_by=week', {
      token: admin,
    });
    const weeks = weekly.data.data.timeline as { date: string; new_users: number; total_users: number }[];
    expect(weeks.length).toBeGreaterThanOrEqual(13);
    expect(weeks.every((w) => new Date(`${w.date}T00:00:00Z`).getUTCDay() === 1)).toBe(true);
    expect(weeks.reduce((n, w) => n + w.new_users, 0)).toBe(5);
    expect(weeks.at(-1)?.total_users).toBe(5);

    const monthly = await t.request('GET', '/api/v1/admin/analytics/users?period=90d&group_by=month', {
      token: admin,
    });
    expect(monthly.data.data.timeline.every((m: { date: string }) => m.date.endsWith('-01'))).toBe(true);

    const day = await t.request('GET', '/api/v1/admin/analytics/users?period=24h', { token: admin });
    expect(day.data.data.summary).toMatchObject({
      total_users: 5,
      new_users_this_period: 3,
      growth_rate: 1.5,
    });
  });

  it('refuses an unknown period with 422', async () => {
    const res = await t.request('GET', '/api/v1/admin/analytics/users?period=1y', { token: admin });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details.field).toBe('period');
  });
});
