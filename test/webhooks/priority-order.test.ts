import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, until } from './webhook-fixtures.js';

/**
 * A subscription's backlog goes highest priority first, then by sequence (decisions §4) — also the part of it
 * this instance has already claimed and holds waiting. A slow target (300 ms a request), 4 requests at a time
 * (`max_concurrency_per_subscription`, so a subscription holds up to 32 claimed deliveries), a backlog of
 * priority-1 events, then one priority-10 event.
 */
describe('priority order of a webhook backlog', { timeout: 40_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform({ webhooks: { max_concurrency_per_subscription: 4, poll_interval_ms: 50 } });
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = () => ({ delayMs: 300 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  /** Deliveries of the subscription claimed and not settled: in flight, or waiting on this instance. */
  const claimed = async (subscriptionId: string) => {
    const res = await t.request(
      'GET',
      `/api/v1/events/subscriptions/${subscriptionId}/deliveries?status=delivering&per_page=100`,
      { token: admin },
    );
    expect(res.statusCode, res.body).toBe(200);
    return res.data.data.pagination.total as number;
  };

  /**
   * Emits `lows` priority-1 events at once, waits until at least `held` are claimed and the next has just
   * started, then emits a priority-10 event; answers the order the target received them in and how many had
   * started when the priority-10 event was stored.
   */
  const backlogThenUrgent = async (path: string, lows: number, held: number) => {
    const sub = await createSubscription(t, admin, {
      event_patterns: [`${path}.*`],
      webhook_config: { url: `${receiver.url}/${path}` },
    });
    const at = () => receiver.at(`/${path}`);
    await Promise.all(
      Array.from({ length: lows }, () => emit(t, admin, { event_type: `${path}.low`, priority: 1 })),
    );
    await until(
      async () => at().length >= 4 && (await claimed(sub.id)) >= held,
      `${held} deliveries claimed`,
    );
    // Right after a delivery started, so that few are near their end while the urgent event is being stored.
    const before = at().length;
    await until(() => at().length > before, 'the next delivery to start');
    const high = await emit(t, admin, { event_type: `${path}.high`, priority: 10 });
    const started = at().length;
    await until(() => at().length === lows + 1, 'every delivery', 20_000);
    return { order: at().map((r) => r.json.event_id as string), high, started };
  };

  it('sends it before the claimed low-priority deliveries still waiting (the brief case: 12 before it)', async () => {
    const { order, high, started } = await backlogThenUrgent('room', 12, 8);
    expect(started).toBeLessThanOrEqual(8);
    // It goes with the next free slot: at most one delivery that was starting as it was stored goes before it.
    expect(order.indexOf(high)).toBeLessThanOrEqual(started + 1);
  });

  it('also when the subscription holds all it may (32): the lowest waiting one is handed back for it', async () => {
    const { order, high, started } = await backlogThenUrgent('full', 48, 17);
    expect(started).toBeLessThan(40);
    expect(order.indexOf(high)).toBeLessThanOrEqual(started + 1);
  });
});
