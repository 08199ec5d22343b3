import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/**
 * Two instances on one PostgreSQL database write events at once (each with its two writer lanes): the roll-ups
 * they both add to give the same figures as a count of the stored events.
 */
describe('event roll-ups written by two instances at once', { timeout: 60_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;

  beforeAll(async () => {
    a = await startPlatform();
    b = await startPlatform({}, { storage: a.storage });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('counts every event of both instances exactly once, by type, source and hour', async () => {
    const tokens = [await a.adminToken(), await b.adminToken()];
    const on = [a, b];
    for (let n = 0; n < 600; n += 60) {
      const batch = await Promise.all(
        Array.from({ length: 60 }, (_, k) => {
          const i = (n + k) % 2;
          return on[i]!.request('POST', '/api/v1/events', {
            token: tokens[i],
            body: { event_type: `pair.t${(n + k) % 3}`, source: `instance-${i}`, data: { n: n + k } },
          });
        }),
      );
      for (const r of batch) expect(r.statusCode).toBe(201);
    }
    const db = a.platform.context.database.db;
    const counted = await db
      .selectFrom('events')
      .select(['event_type', 'source'])
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('event_type', 'like', 'pair.%')
      .groupBy(['event_type', 'source'])
      .orderBy('event_type')
      .orderBy('source')
      .execute();
    expect(counted.reduce((s, r) => s + Number(r.n), 0)).toBe(600);
    const rolled = await db
      .selectFrom('event_rollups')
      .innerJoin('event_rollup_keys as k', 'k.id', 'event_rollups.key_id')
      .select(['span', 'k.event_type', 'k.source'])
      .select((eb) => eb.fn.sum<number>('event_count').as('n'))
      .where('k.event_type', 'like', 'pair.%')
      .groupBy(['span', 'k.event_type', 'k.source'])
      .orderBy('span')
      .orderBy('event_type')
      .orderBy('source')
      .execute();
    const want = counted.map((r) => [r.event_type, r.source, Number(r.n)]);
    for (const span of ['h', 'm']) {
      expect(rolled.filter((r) => r.span === span).map((r) => [r.event_type, r.source, Number(r.n)])).toEqual(
        want,
      );
    }
    const stats = await b.request('GET', '/api/v1/events/stats?group_by=source', { token: tokens[1] });
    const bySource = Object.fromEntries(
      stats.data.data.by_source.map((r: { source: string; count: number }) => [r.source, r.count]),
    );
    expect([bySource['instance-0'], bySource['instance-1']]).toEqual([300, 300]);
  });
});
