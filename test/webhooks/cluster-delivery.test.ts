import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { untilListening } from '../helpers/cluster-sync.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

/**
 * Two instances on one PostgreSQL and Redis (cluster project) claim from the same outbox. The embedded project
 * has one process by design, so there the second "instance" is the first and the same count is checked.
 */
describe('webhook delivery with two instances on the same storage', { timeout: 40_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    a = await startPlatform(FAST_WEBHOOKS);
    b = a.backend === 'cluster' ? await startPlatform(FAST_WEBHOOKS, { storage: a.storage }) : a;
    // The second instance subscribes to Redis asynchronously; it must hear the subscriptions being created.
    if (b !== a) await untilListening(a, b);
  });
  afterAll(async () => {
    if (b !== a) await b.platform.close();
    await a.close();
    await receiver.close();
  });

  it('makes each delivery exactly once while both instances claim at the same time', async () => {
    const adminA = await a.adminToken();
    const adminB = await b.adminToken();
    for (let s = 0; s < 3; s++) {
      await createSubscription(a, adminA, {
        event_patterns: ['both.*', 'probe.*'],
        webhook_config: { url: `${receiver.url}/sub${s}` },
      });
    }
    // The other instance learns of new subscriptions through Redis; its emits count them once it has.
    await until(async () => {
      const res = await b.request('POST', '/api/v1/events', {
        token: adminB,
        body: { event_type: 'probe.sync' },
      });
      return res.data.data.event.subscriber_count === 3;
    }, 'the second instance to see the subscriptions');
    const emits: Promise<unknown>[] = [];
    for (let i = 0; i < 100; i++) {
      const [t, token] = i % 2 === 0 ? [a, adminA] : [b, adminB];
      emits.push(
        t.request('POST', '/api/v1/events', { token, body: { event_type: 'both.event', data: { i } } }),
      );
    }
    for (const res of (await Promise.all(emits)) as { statusCode: number }[])
      expect(res.statusCode).toBe(201);
    const deliveries = () => receiver.requests.filter((r) => r.json.event_type === 'both.event');
    await until(() => deliveries().length >= 300, '300 deliveries', 20_000);
    // Give a duplicate, if there were one, the chance to arrive.
    await new Promise((r) => setTimeout(r, 300));
    const byDelivery = new Map<string, number>();
    for (const r of deliveries()) {
      const id = String(r.headers['x-platform-delivery-id']);
      byDelivery.set(id, (byDelivery.get(id) ?? 0) + 1);
    }
    expect(byDelivery.size).toBe(300);
    expect([...byDelivery.values()].filter((n) => n > 1)).toEqual([]);
    const pairs = new Set(deliveries().map((r) => `${r.path}|${r.json.event_id}`));
    expect(pairs.size).toBe(300);

    const dispatchers = [a, b].filter((t, i) => i === 0 || t !== a);
    const made = dispatchers.map(
      (t) =>
        (t.platform.context.registry.get('webhook_dispatcher') as WebhookDispatcher).metrics()
          .deliveries_delivered ?? 0,
    );
    expect(made.reduce((x, y) => x + y, 0)).toBe(receiver.requests.length);
  });
});
