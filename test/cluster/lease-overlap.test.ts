import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { until } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { Cluster, type Instance } from './cluster-instances.js';

/**
 * A delivery that takes longer than the lease (5 s) is not made by a second instance meanwhile: its instance
 * renews the lease while the request is under way. The receiver counts requests per delivery id that overlap.
 */
describe('deliveries longer than their lease', { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let receiver: Receiver;
  const admin = new Map<Instance, string>();

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    cluster = await Cluster.start(2, {
      PLATFORM__WEBHOOKS__LEASE_SECONDS: '5',
      PLATFORM__WEBHOOKS__POLL_INTERVAL_MS: '50',
    });
    for (const i of cluster.instances) admin.set(i, await i.adminToken());
  }, 90_000);
  afterAll(async () => {
    await cluster?.close();
    await receiver?.close();
  });

  it('are made by one instance at a time, once each', async () => {
    const [a, b] = cluster.instances as [Instance, Instance];
    const res = await a.api('POST', '/api/v1/events/subscriptions', {
      token: admin.get(a)!,
      body: {
        name: 'long',
        event_patterns: ['long.*'],
        webhook_config: { url: `${receiver.url}/long`, timeout_seconds: 20 },
      },
    });
    expect(res.status, JSON.stringify(res.data)).toBe(201);
    receiver.respond = (r) => (r.path === '/long' ? { delayMs: 8000 } : {});
    const ids: string[] = [];
    for (const on of [a, b, a, b, a, b]) {
      const sent = await eventually(async () => {
        const r = await on.api('POST', '/api/v1/events', {
          token: admin.get(on)!,
          body: { event_type: 'long.event' },
        });
        if (r.status === 201 && r.data.data.event.subscriber_count === 1)
          ids.push(r.data.data.event.event_id);
        return r.status === 201 && r.data.data.event.subscriber_count === 1;
      }, 10_000);
      expect(sent, `${on.name} sees the subscription`).toBe(true);
    }
    await until(() => receiver.at('/long').length >= ids.length, 10_000, 'every delivery under way');
    // Past the lease (5 s) and past the 8 s answer: a second request would have arrived by now.
    await new Promise((r) => setTimeout(r, 10_000));
    const byDelivery = new Map<string, number>();
    for (const r of receiver.at('/long')) {
      const id = String(r.headers['x-platform-delivery-id']);
      byDelivery.set(id, (byDelivery.get(id) ?? 0) + 1);
    }
    expect([...byDelivery.values()].filter((n) => n > 1)).toEqual([]);
    expect(new Set(receiver.at('/long').map((r) => r.json.event_id))).toEqual(new Set(ids));
    receiver.respond = () => ({});
  });
});
