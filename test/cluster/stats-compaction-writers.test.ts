import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactMinuteRollups } from '../../src/events/rollup-compaction.js';
import { eventually } from '../helpers/eventually.js';
import { expectStatsAgreement, storedEvents } from '../helpers/stats-full-count.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const KEPT_HOURS = 2;
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Two instances on one PostgreSQL database write events, old and new, while both compact the minute roll-ups
 * (their scheduled jobs every second, and runs of both at the same moment): every event is counted once, and the
 * stats of either instance equal a full count.
 */
describe('minute roll-ups compacted while two instances write', { timeout: 90_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;
  const settings = {
    events: { rollup_minute_retention_hours: KEPT_HOURS, rollup_compaction_schedule: '* * * * * *' },
  };

  beforeAll(async () => {
    a = await startPlatform(settings);
    b = await startPlatform(settings, { storage: a.storage });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('counts every event of both instances exactly once after the compaction', async () => {
    const tokens = [await a.adminToken(), await b.adminToken()];
    const on = [a, b];
    const database = (i: number) => on[i]!.platform.context.database;
    const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
    let compactions = 0;
    for (let n = 0; n < 480; n += 60) {
      const batch = await Promise.all(
        Array.from({ length: 60 }, async (_, k) => {
          const i = (n + k) % 2;
          const res = await on[i]!.request('POST', '/api/v1/events', {
            token: tokens[i],
            body: { event_type: `pair.t${(n + k) % 3}`, source: `instance-${i}`, data: { n: n + k } },
          });
          // Two in three moved back: 3 to 10 hours (minutes that are folded), or into the last hour (kept).
          const j = n + k;
          const back = [0, (3 + (j % 8)) * HOUR + ((j * 7_919) % HOUR), (j * 7_001) % HOUR][j % 3]!;
          if (back > 0) {
            await database(i)
              .db.updateTable('events')
              .set({ timestamp: iso(thisHour - back) })
              .where('event_id', '=', res.data.data.event.event_id)
              .execute();
          }
          return res;
        }),
      );
      for (const r of batch) expect(r.statusCode).toBe(201);
      // Both instances compact at the same moment, while the next batch is written.
      const both = await Promise.all(
        [0, 1].map((i) => compactMinuteRollups(database(i), KEPT_HOURS, Date.now())),
      );
      compactions += both.length;
    }
    expect(compactions).toBeGreaterThan(0);
    const db = a.platform.context.database.db;
    const kept = iso(Math.floor((Date.now() - KEPT_HOURS * HOUR) / HOUR) * HOUR).slice(0, 13);
    const oldMinutes = async () =>
      Number(
        (
          await db
            .selectFrom('event_rollups')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('span', '=', 'm')
            .where('bucket', '<', kept)
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await eventually(async () => (await oldMinutes()) === 0, 15_000)).toBe(true);

    const events = (await storedEvents(db)).filter((e) => e.event_type.startsWith('pair.'));
    expect(events.length).toBe(480);
    const hours = await db
      .selectFrom('event_rollups')
      .innerJoin('event_rollup_keys as k', 'k.id', 'event_rollups.key_id')
      .select((eb) => eb.fn.sum<number>('event_count').as('n'))
      .where('span', '=', 'h')
      .where('k.event_type', 'like', 'pair.%')
      .executeTakeFirstOrThrow();
    expect(Number(hours.n)).toBe(480);

    const now = Date.now();
    const ranges = () => [
      `?start_time=${iso(now - 2 * 86_400_000)}`,
      `?start_time=${iso(now - 7 * HOUR - 123_457)}&end_time=${iso(now - 4 * HOUR - 5 * MINUTE)}`,
      `?start_time=${iso(now - 90 * MINUTE - 4_321)}&end_time=${iso(now - 65_000)}`,
    ];
    for (const [i, instance] of on.entries()) {
      const admin = { token: tokens[i]!, userId: '', isAdmin: true, permissions: ['*'] };
      await expectStatsAgreement(instance, [admin], ranges, ['event_type', 'hour']);
    }
  });
});
