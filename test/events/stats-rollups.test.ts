import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EDGE_EVENTS_LIMIT } from '../../src/events/event-stats-store.js';
import { eventually } from '../helpers/eventually.js';
import {
  adminAndModerator,
  emitAt,
  emitStatsWorkload,
  expectStatsAgreement,
  fullCount,
  type StatsReader,
  statsDisagreement,
  storedEvents,
} from '../helpers/stats-full-count.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('event statistics from the roll-ups', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let readers: [StatsReader, StatsReader];
  let admin: string;
  let adminId: string;
  let moderator: { id: string; access: string };
  let alice: { id: string; access: string };
  /** The start of the hour two hours ago, which holds an event every five minutes. */
  let spread = 0;
  const iso = (ms: number) => new Date(ms).toISOString();

  const db = () => t.platform.context.database.db;
  const stored = () => storedEvents(db());
  const emit = (token: string, body: Record<string, unknown>) => emitAt(t, token, body);
  const statsOf = async (token: string, query: string) => {
    const res = await t.request('GET', `/api/v1/events/stats${query}`, { token });
    expect(res.statusCode, res.body).toBe(200);
    return res.data.data;
  };

  /** Every group_by over several ranges, for the admin and the moderator: the answers equal a full count. */
  const ranges = () => {
    const now = Date.now();
    return [
      '',
      `?start_time=${new Date(now - 3 * DAY).toISOString()}&end_time=${new Date(now).toISOString()}`,
      // Bounds inside minutes, around whole hours.
      `?start_time=${new Date(now - 5 * HOUR - 1234).toISOString()}&end_time=${new Date(now - 17_321).toISOString()}`,
      `?start_time=${new Date(now - 50 * DAY).toISOString()}`,
      // Bounds more and less than half an hour into the hours of the spread events, and into this hour.
      `?start_time=${iso(spread + 10 * 60_000 + 7)}&end_time=${iso(spread + 2 * HOUR + 40 * 60_000 + 1)}`,
      `?start_time=${iso(spread + 50 * 60_000 + 2_001)}&end_time=${iso(spread + HOUR + 44 * 60_000 + 5)}`,
      `?start_time=${iso(spread - HOUR + 20 * 60_000)}&end_time=${iso(spread + HOUR + 12 * 60_000 + 5)}`,
    ];
  };
  const expectAgreement = () => expectStatsAgreement(t, readers, ranges);

  beforeAll(async () => {
    // Minutes kept for ten years: the compaction (every ten minutes) never folds the week-old minutes a test reads.
    t = await startPlatform({
      events: {
        retention_days: 30,
        retention_schedule: '* * * * * *',
        rollup_minute_retention_hours: 87_600,
      },
    });
    readers = await adminAndModerator(t);
    const [a, m] = readers;
    admin = a.token;
    adminId = a.userId;
    moderator = { id: m.userId, access: m.token };
    alice = await t.createUser('alice', ['user']);
    const now = Date.now();
    // A workload over types, sources and levels, moved in time: hours and days back, and beyond retention.
    const places = [0, 0, 0, 3 * HOUR + 17_123, 26 * HOUR + 4_001, 2 * DAY + 5 * 60_000, 45 * DAY];
    await emitStatsWorkload(t, { admin, owner: alice.access }, places, now);
    spread = Math.floor(now / HOUR) * HOUR - 2 * HOUR;
    for (let k = 0; k < 12; k++) {
      await emitAt(
        t,
        admin,
        { event_type: `spread.k${k % 3}`, source: 'clock' },
        spread + k * 5 * 60_000 + 13_000,
      );
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers every group_by and range with the figures a full count of the events gives', async () => {
    await expectAgreement();
  });

  it("leaves other users' confidential events out of a moderator's stats; admins and the emitter see them", async () => {
    const q = `?start_time=${new Date(Date.now() - 3 * DAY).toISOString()}&group_by=event_type`;
    const mod = await statsOf(moderator.access, q);
    expect(mod.by_event_type.map((r: any) => r.event_type)).not.toContain('alice.secret');
    expect(mod.by_source.map((r: any) => r.source)).not.toContain('diary');
    // Its timeline leaves out the same keys (the logins it may not read, the secret): it adds up to its total.
    const timelineSum = (s: any) => s.timeline.reduce((n: number, r: any) => n + r.event_count, 0);
    expect(timelineSum(mod)).toBe(mod.summary.total_events);
    const all = await statsOf(admin, q);
    const secret = all.by_event_type.find((r: any) => r.event_type === 'alice.secret');
    expect(secret?.count).toBeGreaterThan(0);
    // Every other type counts alike for both, but the logins (auth.*), which need admin:security, and the
    // tasks' events (task.*), which the scheduled jobs may raise between the two reads.
    const background = (type: string) => type.startsWith('task.');
    const modCounts = new Map(
      mod.by_event_type
        .filter((r: any) => !background(r.event_type))
        .map((r: any) => [r.event_type, r.count]),
    );
    const shared = all.by_event_type.filter(
      (r: any) =>
        r.event_type !== 'alice.secret' && !r.event_type.startsWith('auth.') && !background(r.event_type),
    );
    for (const r of shared) expect(modCounts.get(r.event_type), r.event_type).toBe(r.count);
    expect(modCounts.size).toBe(shared.length);
    // The events themselves are hidden from the moderator just the same.
    const listed = await t.request('GET', '/api/v1/events?event_type=alice.secret', {
      token: moderator.access,
    });
    expect(listed.data.data.events).toEqual([]);
  });

  it('keeps the figures right after retention and a purge', async () => {
    const gone = async () =>
      Number(
        (
          await db()
            .selectFrom('events')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('timestamp', '<', new Date(Date.now() - 30 * DAY).toISOString())
            .executeTakeFirstOrThrow()
        ).n,
      ) === 0;
    expect(await eventually(gone, 10_000)).toBe(true);
    const res = await t.request('POST', '/api/v1/events/purge', {
      token: admin,
      body: { criteria: { older_than_days: 1, event_types: ['shop.refund'] }, batch_size: 2 },
    });
    expect(res.statusCode).toBe(202);
    const id = res.data.data.purge_id;
    expect(
      await eventually(
        async () =>
          (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge.status ===
          'completed',
      ),
    ).toBe(true);
    const purge = (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge;
    expect(purge).toMatchObject({ events_purged: 2, events_to_purge: 2 });
    await expectAgreement();
  });

  it('keeps the figures right after a restore replaced the events', async () => {
    const created = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['database'] },
    });
    expect(created.statusCode).toBeLessThan(300);
    const backupId = created.data.data.backup_id;
    // The backup is written by a task (its id the backup's): wait until the task has ended, lock released.
    expect(
      await eventually(async () => {
        const task = await t.request('GET', `/api/v1/tasks/${backupId}`, { token: admin });
        return task.data.data.status === 'completed';
      }, 20_000),
    ).toBe(true);
    // Events that the restore takes away again, and some that it brings back.
    for (let i = 0; i < 5; i++) await emit(admin, { event_type: 'after.backup', source: 'late' });
    const restore = await t.request('POST', `/api/v1/backup/${backupId}/restore`, {
      token: admin,
      body: { confirm: true },
    });
    expect(restore.statusCode, restore.body).toBe(202);
    expect(
      await eventually(async () => {
        const task = await t.request('GET', `/api/v1/tasks/${restore.data.data.restore_id}`, {
          token: admin,
        });
        return task.data.data.status === 'completed';
      }, 30_000),
    ).toBe(true);
    const s = await statsOf(admin, '?group_by=event_type');
    expect(s.by_event_type.map((r: any) => r.event_type)).not.toContain('after.backup');
    await expectAgreement();
  });

  it('answers stats and event health without reading the events table', async () => {
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    const range = `?start_time=${new Date(minute - 3 * DAY).toISOString()}&end_time=${new Date(minute - 1).toISOString()}`;
    const before = await statsOf(admin, `${range}&group_by=hour`);
    // Out of reach for a moment: a query that read it would fail.
    await sql`alter table events rename to events_away`.execute(db());
    try {
      const after = await statsOf(admin, `${range}&group_by=hour`);
      expect(after).toEqual(before);
      const byModerator = await t.request('GET', `/api/v1/events/stats${range}&group_by=day`, {
        token: moderator.access,
      });
      expect(byModerator.statusCode).toBe(200);
      const health = await t.request('GET', '/api/v1/events/health', { token: admin });
      expect(health.statusCode).toBe(200);
      expect(health.data.data.metrics.processing_rate).toBeGreaterThanOrEqual(0);
    } finally {
      await sql`alter table events_away rename to events`.execute(db());
    }
  });

  it('reads the hour under way as its hour row less the minutes after now, not minute by minute', async () => {
    // Ten and a half minutes into the hour of the spread events, by the platform's clock: the default range (the
    // last day) ends in that hour, whose minutes :00 and :05 hold events. Before, those minutes were read one by
    // one (every key of every minute so far: what made the stats of a busy store grow with its minutes); now the
    // hour's row less the minutes after the range (this minute's, and the events stamped ahead of the clock).
    const now = spread + 10 * 60_000 + 30_000;
    const minute = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    const skew = (by: number) =>
      sql`update event_rollups set event_count = event_count + ${by}
        where span = 'm' and bucket >= ${minute(spread)} and bucket < ${minute(spread + 10 * 60_000)}`.execute(
        db(),
      );
    // Those minutes' rows made wrong for a moment: an answer that read them would be off by thousands.
    const skewed = Number((await skew(1000)).numAffectedRows ?? 0);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(now);
      expect(skewed).toBeGreaterThan(0);
      const s = await statsOf(admin, '?group_by=hour');
      expect(s.time_range).toEqual({ start: iso(now - DAY), end: iso(now) });
      const reader = { userId: adminId, isAdmin: true, permissions: ['*'] };
      expect(statsDisagreement(s, await stored(), reader, 'the last day', 'hour')).toEqual([]);
    } finally {
      vi.useRealTimers();
      await skew(-1000);
    }
  });

  it('counts a bound inside a very busy minute as that whole minute, and says so in time_range', async () => {
    const ids: string[] = [];
    for (let n = 0; n <= EDGE_EVENTS_LIMIT; n += 100) {
      const batch = await Promise.all(
        Array.from({ length: 100 }, () => emit(admin, { event_type: 'busy.minute', source: 'burst' })),
      );
      ids.push(...batch);
    }
    // All of them in one minute a week ago, before the bound that falls in it.
    const minute = Math.floor((Date.now() - 7 * DAY) / 60_000) * 60_000;
    await db()
      .updateTable('events')
      .set({ timestamp: new Date(minute + 10_000).toISOString() })
      .where('event_id', 'in', ids)
      .execute();
    const start = new Date(minute + 30_000).toISOString();
    const end = new Date(minute + 3 * 60_000 + 5_000).toISOString();
    const s = await statsOf(admin, `?start_time=${start}&end_time=${end}&group_by=event_type`);
    expect(s.time_range).toEqual({ start: new Date(minute).toISOString(), end });
    const busy = s.by_event_type.find((r: any) => r.event_type === 'busy.minute');
    expect(busy.count).toBe(ids.length);
    const expected = fullCount(await stored(), s.time_range, 'hour', {
      userId: adminId,
      isAdmin: true,
      permissions: ['*'],
    });
    expect(s.summary.total_events).toBe(expected.total);
  });
});
