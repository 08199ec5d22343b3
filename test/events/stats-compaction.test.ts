import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import {
  adminAndModerator,
  emitAt,
  emitStatsWorkload,
  expectStatsAgreement,
  type StatsReader,
  storedEvents,
} from '../helpers/stats-full-count.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Minute roll-ups are kept for this many hours in this test (`events.rollup_minute_retention_hours`). */
const KEPT_HOURS = 3;
const iso = (ms: number) => new Date(ms).toISOString();
const floorTo = (ms: number, unit: number) => Math.floor(ms / unit) * unit;

/**
 * The minute roll-ups of the stats are kept for `events.rollup_minute_retention_hours`; older minutes are folded
 * into the hour roll-ups by a job (every second here). The stats keep equalling a full count of the events: a
 * bound older than the kept minutes is counted to the whole hour, and `time_range` says which range was counted.
 */
describe('minute roll-ups compacted into hours', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let readers: [StatsReader, StatsReader];
  let admin: string;
  let alice: { id: string; access: string };
  /** The start of an hour eight hours back (long compacted), which holds an event every five minutes. */
  let oldHour = 0;
  let start = 0;

  const db = () => t.platform.context.database.db;
  const emit = (token: string, body: Record<string, unknown>, at?: number) => emitAt(t, token, body, at);
  const statsOf = async (token: string, query: string) => {
    const res = await t.request('GET', `/api/v1/events/stats${query}`, { token });
    expect(res.statusCode, res.body).toBe(200);
    return res.data.data;
  };
  /** Minute roll-ups of hours before the kept ones (what the compaction deletes). */
  const oldMinuteRows = async () =>
    Number(
      (
        await db()
          .selectFrom('event_rollups')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('span', '=', 'm')
          .where('bucket', '<', iso(floorTo(Date.now() - KEPT_HOURS * HOUR, HOUR)).slice(0, 13))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const compacted = async () =>
    expect(await eventually(async () => (await oldMinuteRows()) === 0, 15_000)).toBe(true);

  /** Ranges with bounds in kept minutes, in folded ones, and both. */
  const ranges = () => {
    const now = Date.now();
    return [
      '',
      `?start_time=${iso(now - 3 * DAY)}&end_time=${iso(now)}`,
      `?start_time=${iso(now - 2 * HOUR - 1234)}&end_time=${iso(now - 17_321)}`,
      `?start_time=${iso(oldHour + 10 * MINUTE + 7)}&end_time=${iso(oldHour + 2 * HOUR + 40 * MINUTE + 1)}`,
      `?start_time=${iso(oldHour + 50 * MINUTE + 2_001)}&end_time=${iso(oldHour + 44 * MINUTE + HOUR)}`,
      `?start_time=${iso(oldHour + 20 * MINUTE)}&end_time=${iso(now - 17_321)}`,
      `?start_time=${iso(now - 30 * HOUR + 5 * MINUTE)}&end_time=${iso(now - 5 * HOUR - 3 * MINUTE)}`,
    ];
  };
  const expectAgreement = () => expectStatsAgreement(t, readers, ranges, ['event_type', 'hour', 'day']);

  beforeAll(async () => {
    t = await startPlatform({
      events: { rollup_minute_retention_hours: KEPT_HOURS, rollup_compaction_schedule: '* * * * * *' },
    });
    readers = await adminAndModerator(t);
    admin = readers[0].token;
    alice = await t.createUser('alice', ['user']);
    start = Date.now();
    oldHour = floorTo(start, HOUR) - 8 * HOUR;
    // Kept minutes (now, 40 minutes and two hours back) and folded ones (five hours, a day and more back).
    const places = [0, 40 * MINUTE + 3_001, 2 * HOUR + 17_123, 5 * HOUR + 4_001, 26 * HOUR + 61_000, 2 * DAY];
    await emitStatsWorkload(t, { admin, owner: alice.access }, places, start);
    // In the hour of a purge's cutoff a day back, before it: minutes that the compaction folds.
    const dayBack = start - DAY;
    for (let i = 0; i < 3; i++) {
      const at = Math.max(floorTo(dayBack, HOUR) + 1_000, dayBack - 20 * MINUTE) - i * 1_000;
      await emit(admin, { event_type: 'old.purge', source: 'batch' }, at);
    }
    for (let k = 0; k < 24; k++) {
      await emit(
        admin,
        { event_type: `spread.k${k % 3}`, source: 'clock' },
        oldHour + k * 5 * MINUTE + 13_000,
      );
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('deletes the minute roll-ups older than the bound and keeps every hour', async () => {
    await compacted();
    // Every event is still counted by the hour rows, and by the minute rows from the bound on.
    const rolled = async (span: 'm' | 'h', from: string) =>
      Number(
        (
          await db()
            .selectFrom('event_rollups')
            .select((eb) => eb.fn.sum<number>('event_count').as('n'))
            .where('span', '=', span)
            .where('bucket', '>=', from)
            .executeTakeFirstOrThrow()
        ).n ?? 0,
      );
    const kept = iso(floorTo(Date.now() - KEPT_HOURS * HOUR, HOUR));
    const events = await storedEvents(db());
    expect(await rolled('h', '')).toBe(events.length);
    expect(await rolled('m', kept.slice(0, 13))).toBe(events.filter((e) => e.timestamp >= kept).length);
  });

  it('answers ranges in kept minutes exactly and older bounds to the whole hour, as time_range says', async () => {
    await compacted();
    await expectAgreement();
    const now = Date.now();
    // Both bounds in folded minutes: the hours around them.
    const old = await statsOf(
      admin,
      `?start_time=${iso(oldHour + 10 * MINUTE + 7)}&end_time=${iso(oldHour + HOUR + 40 * MINUTE + 1)}`,
    );
    expect(old.time_range).toEqual({ start: iso(oldHour), end: iso(oldHour + 2 * HOUR - 1) });
    expect(old.summary.total_events).toBe(24);
    // A kept end stays as asked; the start goes back to its hour.
    const end = iso(now - 17_321);
    const mixed = await statsOf(admin, `?start_time=${iso(oldHour + 20 * MINUTE)}&end_time=${end}`);
    expect(mixed.time_range).toEqual({ start: iso(oldHour), end });
    // Both bounds in kept minutes: exactly the range asked.
    const recentStart = iso(now - 2 * HOUR - 1234);
    const recent = await statsOf(admin, `?start_time=${recentStart}&end_time=${end}`);
    expect(recent.time_range).toEqual({ start: recentStart, end });
  });

  it('still counts the recent minutes for the event health', async () => {
    for (let i = 0; i < 3; i++) await emit(admin, { event_type: 'health.now', source: 'probe' });
    const health = await t.request('GET', '/api/v1/events/health', { token: admin });
    expect(health.statusCode).toBe(200);
    expect(health.data.data.metrics.processing_rate).toBeGreaterThanOrEqual(3 / 120);
  });

  it('counts and purges events in compacted hours exactly, and the figures stay right', async () => {
    await compacted();
    await emit(admin, { event_type: 'old.purge', source: 'batch' }, Date.now() - 4 * DAY);
    // An event written into a folded minute after the compaction: its minute row is not read, its hour is.
    await emit(admin, { event_type: 'spread.late', source: 'clock' }, oldHour + 31 * MINUTE);

    const dry = await t.request('POST', '/api/v1/events/purge', {
      token: admin,
      body: { criteria: { older_than_days: 1 }, dry_run: true },
    });
    expect(dry.statusCode, dry.body).toBe(202);
    const older = (await storedEvents(db())).filter((e) => e.timestamp < dry.data.data.cutoff);
    expect(dry.data.data.events_to_purge).toBe(older.length);

    const res = await t.request('POST', '/api/v1/events/purge', {
      token: admin,
      body: { criteria: { older_than_days: 1, event_types: ['old.purge'] }, batch_size: 2 },
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.data.data.events_to_purge).toBe(4);
    const id = res.data.data.purge_id;
    const purge = async () =>
      (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge;
    expect(await eventually(async () => (await purge()).status === 'completed')).toBe(true);
    expect(await purge()).toMatchObject({ events_purged: 4, events_to_purge: 4 });
    const left = await db()
      .selectFrom('event_rollups')
      .innerJoin('event_rollup_keys as k', 'k.id', 'event_rollups.key_id')
      .select(['span', 'bucket', 'event_count'])
      .where('k.event_type', '=', 'old.purge')
      .execute();
    expect(left).toEqual([]);
    await compacted();
    await expectAgreement();
  });
});
