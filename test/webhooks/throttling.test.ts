import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { EDGE_MS, mostInWindow, windowCounts } from './arrival-windows.js';
import { Receiver } from './receiver.js';
import { startReceiverProcess } from './receiver-process.js';
import { createSubscription, emit, getEvent, getSubscription, until } from './webhook-fixtures.js';

/**
 * `webhook_config.rate_limit` and a target's `Retry-After` on 429/503, on one instance (SQLite, or PostgreSQL
 * and Redis on the cluster project: there the pace is kept in Redis). Retry policies at a twentieth of their
 * time, so only the target's Retry-After can explain a wait of seconds.
 */
describe('throttling per subscription', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform({ webhooks: { retry_delay_scale: 0.05, poll_interval_ms: 50 } });
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('takes rate_limit on create and update, shows it when read, and removes it with null', async () => {
    const limited = await createSubscription(t, admin, {
      event_patterns: ['field.*'],
      webhook_config: { url: `${receiver.url}/field`, rate_limit: 2.5 },
    });
    expect((await getSubscription(t, admin, limited.id)).webhook_config.rate_limit).toBe(2.5);
    const plain = await createSubscription(t, admin, {
      event_patterns: ['field.*'],
      webhook_config: { url: `${receiver.url}/field` },
    });
    expect((await getSubscription(t, admin, plain.id)).webhook_config.rate_limit).toBeNull();

    const patch = (id: string, webhook_config: Record<string, unknown>) =>
      t.request('PATCH', `/api/v1/events/subscriptions/${id}`, { token: admin, body: { webhook_config } });
    let res = await patch(plain.id, { rate_limit: 0.1 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.data.data.subscription.webhook_config.rate_limit).toBe(0.1);
    // Another field of webhook_config leaves the limit as it is.
    res = await patch(plain.id, { timeout_seconds: 5 });
    expect(res.data.data.subscription.webhook_config.rate_limit).toBe(0.1);
    res = await patch(plain.id, { rate_limit: null });
    expect(res.data.data.subscription.webhook_config.rate_limit).toBeNull();
    expect((await getSubscription(t, admin, plain.id)).webhook_config.rate_limit).toBeNull();

    for (const bad of [0, -1, 10_001, 'fast']) {
      res = await patch(limited.id, { rate_limit: bad });
      expect(res.statusCode, `rate_limit ${bad}`).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
      expect(res.body).toContain('rate_limit');
    }
    expect((await getSubscription(t, admin, limited.id)).webhook_config.rate_limit).toBe(2.5);
  });

  it('never sends a subscription limited to 5/s more than 5 in a second; the others go at full speed', async () => {
    const target = await startReceiverProcess();
    try {
      await createSubscription(t, admin, {
        event_patterns: ['paced.*'],
        webhook_config: { url: `${target.url}/paced`, rate_limit: 5 },
      });
      await createSubscription(t, admin, {
        event_patterns: ['paced.*'],
        webhook_config: { url: `${target.url}/free` },
      });
      const ids = await Promise.all(
        Array.from({ length: 40 }, (_, i) => emit(t, admin, { event_type: 'paced.event', data: { i } })),
      );
      await until(() => target.at('/free').length >= 40, 'the unlimited subscription', 10_000);
      // The other subscription's lane is not slowed: all of it arrives while the limited one is still at it.
      expect(
        mostInWindow(
          target.at('/free').map((r) => r.at),
          1000,
        ),
      ).toBeGreaterThan(5);
      expect(target.at('/paced').length).toBeLessThan(40);

      await until(() => target.at('/paced').length >= 40, 'every limited delivery', 30_000);
      const paced = target.at('/paced');
      expect(paced).toHaveLength(40);
      expect(new Set(paced.map((r) => r.event_id))).toEqual(new Set(ids));
      // Waiting for its turn is neither a failure nor an attempt.
      expect(paced.every((r) => r.attempt === 1)).toBe(true);
      const counts = windowCounts(
        paced.map((r) => r.at),
        EDGE_MS,
      );
      expect(counts.inner, counts.gaps).toBeLessThanOrEqual(5);
      expect(counts.second, counts.gaps).toBeLessThanOrEqual(6);
      // 40 at 5/s: the first goes at once, the last about 7.8 s later.
      expect(paced.at(-1)!.at - paced[0]!.at).toBeGreaterThanOrEqual(39 * 200 - 2 * EDGE_MS);
    } finally {
      await target.close();
    }
  });

  it('counts a batch request as one delivery of the limit', async () => {
    const target = await startReceiverProcess();
    try {
      await createSubscription(t, admin, {
        event_patterns: ['bundled.*'],
        webhook_config: { url: `${target.url}/bundled`, rate_limit: 2 },
        batch_config: { enabled: true, max_batch_size: 3, max_wait_time_seconds: 0 },
      });
      await Promise.all(
        Array.from({ length: 12 }, (_, i) => emit(t, admin, { event_type: 'bundled.event', data: { i } })),
      );
      const sent = () => target.at('/bundled').flatMap((r) => r.deliveries ?? []);
      await until(() => sent().length >= 12, 'every event in some batch', 30_000);
      const requests = target.at('/bundled');
      expect(new Set(sent()).size).toBe(12);
      expect(requests.length).toBeGreaterThanOrEqual(4);
      // 2 requests a second: one every 500 ms.
      const counts = windowCounts(
        requests.map((r) => r.at),
        EDGE_MS,
      );
      expect(counts.inner, counts.gaps).toBeLessThanOrEqual(2);
      expect(counts.second, counts.gaps).toBeLessThanOrEqual(3);
    } finally {
      await target.close();
    }
  });

  it('drops a delivery whose event expires while it waits for its turn', async () => {
    const sub = await createSubscription(t, admin, {
      event_patterns: ['brief.*'],
      webhook_config: { url: `${receiver.url}/brief`, rate_limit: 0.4 },
    });
    // One every 2.5 s: the first goes at once, the two others' turns come after their events expired.
    const expires_at = new Date(Date.now() + 1500).toISOString();
    for (let i = 0; i < 3; i++) await emit(t, admin, { event_type: 'brief.event', expires_at, data: { i } });
    const dropped = async () =>
      (
        await t.request('GET', `/api/v1/events/subscriptions/${sub.id}/deliveries?status=dropped`, {
          token: admin,
        })
      ).data.data.deliveries as { last_error: string }[];
    await until(async () => (await dropped()).length === 2, 'two deliveries dropped', 15_000);
    expect((await dropped()).map((d) => d.last_error)).toEqual(['event expired', 'event expired']);
    expect(receiver.at('/brief').map((r) => r.json.data.i)).toEqual([0]);
  });

  it('drops the events of a batch that expire while its request waits for its turn', async () => {
    const sub = await createSubscription(t, admin, {
      event_patterns: ['brief-batch.*'],
      webhook_config: { url: `${receiver.url}/brief-batch`, rate_limit: 0.4 },
      batch_config: { enabled: true, max_batch_size: 1, max_wait_time_seconds: 0 },
    });
    // One request every 2.5 s: the first goes at once; the other batches are claimed before their events
    // expire, and their turns come after.
    const expires_at = new Date(Date.now() + 1500).toISOString();
    for (let i = 0; i < 3; i++) {
      await emit(t, admin, { event_type: 'brief-batch.event', expires_at, data: { i } });
    }
    const deliveries = async (status: string) =>
      (
        await t.request('GET', `/api/v1/events/subscriptions/${sub.id}/deliveries?status=${status}`, {
          token: admin,
        })
      ).data.data.deliveries as { last_error: string }[];
    // Settled both ways: dropped (the fix) or delivered (sent after expiry), so the check cannot wait in vain.
    await until(
      async () => (await deliveries('dropped')).length + (await deliveries('delivered')).length === 3,
      'every delivery of the batch subscription settled',
      20_000,
    );
    expect((await deliveries('dropped')).map((d) => d.last_error)).toEqual([
      'event expired',
      'event expired',
    ]);
    const sent = receiver.at('/brief-batch').flatMap((r) => r.json.events.map((e: any) => e.data.i));
    expect(sent).toEqual([0]);
  });

  it("holds a subscription's deliveries, not only the retried one, for a 429's Retry-After", async () => {
    receiver.respond = (req) =>
      req.path === '/busy' && receiver.at('/busy').length === 1
        ? { status: 429, headers: { 'retry-after': '2' } }
        : {};
    try {
      await createSubscription(t, admin, {
        event_patterns: ['busy.*'],
        webhook_config: {
          url: `${receiver.url}/busy`,
          retry_policy: { max_attempts: 3, retry_delay_seconds: 1, exponential_backoff: false },
        },
      });
      await createSubscription(t, admin, {
        event_patterns: ['calm.*'],
        webhook_config: { url: `${receiver.url}/calm` },
      });
      const first = await emit(t, admin, { event_type: 'busy.event', data: { n: 0 } });
      // The 429 is recorded (and the pause with it) before the next events are emitted.
      await until(
        async () => (await getEvent(t, admin, first)).delivery_info.delivery_attempts.length === 1,
        'the first attempt to be recorded',
      );
      const refused = receiver.at('/busy')[0]!;
      expect((await getEvent(t, admin, first)).delivery_info.delivery_attempts[0].response_status).toBe(429);
      const calmAt = performance.now();
      await emit(t, admin, { event_type: 'calm.event' });
      await emit(t, admin, { event_type: 'busy.event', data: { n: 1 } });
      await emit(t, admin, { event_type: 'busy.event', data: { n: 2 } });
      await until(() => receiver.at('/calm').length === 1, 'the other subscription');
      // Another subscription's lane is not held.
      expect(receiver.at('/calm')[0]!.at - calmAt).toBeLessThan(1000);
      await until(() => receiver.at('/busy').length === 4, 'the retry and the two held deliveries', 10_000);
      const later = receiver.at('/busy').slice(1);
      expect(later.map((r) => r.json.data.n).sort()).toEqual([0, 1, 2]);
      // The policy alone would retry after 50 ms; the two others would go at once. 5 ms: clocks' rounding.
      for (const r of later) expect(r.at - refused.at).toBeGreaterThanOrEqual(1995);
      expect(later.find((r) => r.json.data.n === 0)!.json.attempt).toBe(2);
      for (const r of later.filter((x) => x.json.data.n !== 0)) expect(r.json.attempt).toBe(1);
    } finally {
      receiver.respond = () => ({});
    }
  });
});
