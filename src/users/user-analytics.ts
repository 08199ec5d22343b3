import { type Kysely, sql } from 'kysely';
import type { Tables } from '../storage/tables.js';

export type AnalyticsPeriod = '24h' | '7d' | '30d' | '90d';
export type AnalyticsGrouping = 'day' | 'week' | 'month';

const PERIOD_MS: Record<AnalyticsPeriod, number> = {
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
  '90d': 90 * 86_400_000,
};

/** The UTC start of the day, ISO week (Monday) or month holding `t`. */
function bucketStart(t: Date, unit: AnalyticsGrouping): Date {
  const d = new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate()));
  if (unit === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  if (unit === 'month') d.setUTCDate(1);
  return d;
}

function nextBucket(d: Date, unit: AnalyticsGrouping): Date {
  const n = new Date(d);
  if (unit === 'day') n.setUTCDate(n.getUTCDate() + 1);
  else if (unit === 'week') n.setUTCDate(n.getUTCDate() + 7);
  else n.setUTCMonth(n.getUTCMonth() + 1);
  return n;
}

const day = sql<string>`substr(created_at, 1, 10)`;

/**
 * User analytics, all counted from the users and sessions tables:
 * - `active_users`: users whose last login falls in the period;
 * - `growth_rate`: new users of the period ÷ users that existed before it (null when there were none);
 * - timeline `active_users`: distinct users who logged in (opened a session) within the bucket.
 */
export async function userAnalytics(
  db: Kysely<Tables>,
  period: AnalyticsPeriod,
  groupBy: AnalyticsGrouping,
  now = new Date(),
) {
  const since = new Date(now.getTime() - PERIOD_MS[period]).toISOString();
  const base = () => db.selectFrom('users');
  const count = async (build: (q: ReturnType<typeof base>) => ReturnType<typeof base>) => {
    const row = await build(base())
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  };
  const [total, active, fresh] = await Promise.all([
    count((q) => q),
    count((q) => q.where('last_login', '>=', since)),
    count((q) => q.where('created_at', '>=', since)),
  ]);
  const existedBefore = total - fresh;

  const first = bucketStart(new Date(since), groupBy);
  const firstIso = first.toISOString();
  const [before, createdByDay, loginsByDay, roleRows, statusRows] = await Promise.all([
    count((q) => q.where('created_at', '<', firstIso)),
    db
      .selectFrom('users')
      .select([day.as('day'), (eb) => eb.fn.countAll<number>().as('n')])
      .where('created_at', '>=', firstIso)
      .groupBy(day)
      .execute(),
    db
      .selectFrom('sessions')
      .select([day.as('day'), 'user_id'])
      .where('created_at', '>=', firstIso)
      .groupBy([day, 'user_id'])
      .execute(),
    db
      .selectFrom('users')
      .select(['roles', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('roles')
      .execute(),
    db
      .selectFrom('users')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute(),
  ]);

  const timeline: { date: string; new_users: number; active_users: number; total_users: number }[] = [];
  let running = before;
  for (let start = first; start <= now; start = nextBucket(start, groupBy)) {
    const from = start.toISOString().slice(0, 10);
    const to = nextBucket(start, groupBy).toISOString().slice(0, 10);
    const inBucket = (d: string) => d >= from && d < to;
    const created = createdByDay.filter((r) => inBucket(r.day)).reduce((sum, r) => sum + Number(r.n), 0);
    const loggedIn = new Set(loginsByDay.filter((r) => inBucket(r.day)).map((r) => r.user_id));
    running += created;
    timeline.push({ date: from, new_users: created, active_users: loggedIn.size, total_users: running });
  }

  const byRole: Record<string, number> = {};
  for (const r of roleRows) {
    for (const role of JSON.parse(r.roles) as string[]) byRole[role] = (byRole[role] ?? 0) + Number(r.n);
  }
  const byStatus: Record<string, number> = { active: 0, inactive: 0, suspended: 0 };
  for (const r of statusRows) byStatus[r.status] = Number(r.n);

  return {
    period,
    group_by: groupBy,
    start_time: since,
    end_time: now.toISOString(),
    summary: {
      total_users: total,
      active_users: active,
      new_users_this_period: fresh,
      growth_rate: existedBefore > 0 ? Math.round((fresh / existedBefore) * 10_000) / 10_000 : null,
    },
    timeline,
    demographics: { by_role: byRole, by_status: byStatus },
  };
}
