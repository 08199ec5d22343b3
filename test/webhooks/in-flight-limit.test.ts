import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

/**
 * `webhooks.max_in_flight` below what the subscriptions' concurrency would allow (6 × 3 = 18 against 8): the
 * target never sees more requests at once than the limit, and the backlog still goes out at once. The poll is a minute away, so every
 * claim here is one the dispatcher's own wake-ups made.
 */
describe('webhook deliveries under webhooks.max_in_flight', { timeout: 40_000 }, () => {
  const LIMIT = 8;
  let t: TestPlatform;
  let receiver: Receiver;
  let open = 0;
  let mostOpen = 0;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = () => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      setTimeout(() => {
        open -= 1;
      }, 15);
      return { delayMs: 15 };
    };
    t = await startPlatform({
      webhooks: {
        ...FAST_WEBHOOKS.webhooks,
        poll_interval_ms: 60_000,
        max_in_flight: LIMIT,
        max_concurrency_per_subscription: 3,
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('never has more requests open than the limit, and delivers the whole backlog without waiting for the poll', async () => {
    const admin = await t.adminToken();
    const subscriptions = 6;
    for (let s = 0; s < subscriptions; s++) {
      await createSubscription(t, admin, {
        event_patterns: ['limited.*'],
        webhook_config: { url: `${receiver.url}/s${s}` },
      });
    }
    const events = 40;
    await Promise.all(
      Array.from({ length: events }, (_, i) => emit(t, admin, { event_type: 'limited.event', data: { i } })),
    );
    await until(
      () => receiver.requests.length >= events * subscriptions,
      `${events * subscriptions} deliveries well before the next poll`,
      15_000,
    );
    expect(receiver.requests).toHaveLength(events * subscriptions);
    expect(mostOpen).toBeGreaterThan(1);
    expect(mostOpen).toBeLessThanOrEqual(LIMIT);
  });
});
