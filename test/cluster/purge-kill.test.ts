import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { Cluster, type Instance } from './cluster-instances.js';

/**
 * Issue 23 item 14: a purge whose instance is killed (SIGKILL) in the middle is resumed by another instance, and
 * the count it reports is exactly the number of events deleted, as the stats count them.
 */
describe('a purge whose instance is killed', { timeout: 120_000 }, () => {
  let cluster: Cluster;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    cluster = await Cluster.start(2, { PLATFORM__TASKS__LEASE_SECONDS: '1' });
    [a, b] = cluster.instances as [Instance, Instance];
  }, 90_000);
  afterAll(async () => {
    await cluster?.close();
  });

  it('is resumed on another instance and reports exactly the events it deleted', async () => {
    const tokenA = await a.adminToken();
    const tokenB = await b.adminToken();
    const total = 3000;
    for (let n = 0; n < total; n += 100) {
      const batch = await Promise.all(
        Array.from({ length: 100 }, (_, k) =>
          a.api('POST', '/api/v1/events', {
            token: tokenA,
            body: { event_type: 'doomed.entry', data: { n: n + k } },
          }),
        ),
      );
      for (const r of batch) expect(r.status).toBe(201);
    }
    const stats = async () =>
      (
        await b.api('GET', '/api/v1/events/stats?group_by=event_type', { token: tokenB })
      ).data.data.by_event_type.find((r: { event_type: string }) => r.event_type === 'doomed.entry')?.count ??
      0;
    expect(await stats()).toBe(total);

    const started = await a.api('POST', '/api/v1/events/purge', {
      token: tokenA,
      body: { criteria: { older_than_days: 0, event_types: ['doomed.*'] }, batch_size: 7 },
    });
    expect(started.status).toBe(202);
    const id = started.data.data.purge_id;
    const status = async (on: Instance, token: string) =>
      (await on.api('GET', `/api/v1/events/purge/${id}`, { token })).data.data.purge;
    expect(
      await eventually(async () => (await status(a, tokenA)).events_purged > 0, 20_000),
      'the purge has begun',
    ).toBe(true);
    await cluster.kill(a);
    const halfway = await stats();
    expect(halfway).toBeLessThan(total);

    expect(await eventually(async () => (await status(b, tokenB)).status === 'completed', 60_000)).toBe(true);
    expect(await status(b, tokenB)).toMatchObject({
      events_purged: total,
      events_to_purge: total,
      progress: { events_purged: total, total_events: total, percentage: 100 },
    });
    expect(await stats()).toBe(0);
  });
});
