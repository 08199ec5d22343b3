import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

/**
 * The dispatcher claims up to 8 × max_concurrency_per_subscription (4) deliveries of a slow target ahead of
 * sending them. Once their events are purged, those it holds and has not started are let go, not sent.
 * (test/cluster/forget-deliveries.test.ts checks the same for deliveries held by another instance.)
 */
describe('a purge while the dispatcher holds deliveries of the purged events', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const held = () =>
    (t.platform.context.registry.get('webhook_dispatcher') as WebhookDispatcher).metrics()[
      'held_deliveries'
    ] ?? 0;

  it('sends none of the deliveries it held but had not started', async () => {
    await createSubscription(t, admin, {
      event_patterns: ['heldpurge.*'],
      webhook_config: { url: `${receiver.url}/held` },
    });
    receiver.respond = (r) => (r.path === '/held' ? { delayMs: 500 } : {});
    try {
      const ids = new Set<string>();
      for (let i = 0; i < 40; i++)
        ids.add(await emit(t, admin, { event_type: 'heldpurge.entry', data: { i } }));
      await until(() => receiver.at('/held').length >= 4, 'the first deliveries under way');
      // 4 under way and more waiting behind them.
      await until(() => held() >= 12, 'deliveries held ahead of sending');
      const purge = await t.request('POST', '/api/v1/events/purge', {
        token: admin,
        body: { criteria: { event_types: ['heldpurge.*'] } },
      });
      expect(purge.statusCode, purge.body).toBe(202);
      const id = purge.data.data.purge_id as string;
      await until(
        async () =>
          (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge.status ===
          'completed',
        'the purge',
      );
      const atPurge = receiver.at('/held').length;
      await new Promise((r) => setTimeout(r, 2000));
      // Requests are counted on arrival. One the dispatcher had started (4 at a time) may still reach the
      // receiver after the purge completed; every held one not started did before the fix (12–16 of them).
      expect(receiver.at('/held').length - atPurge).toBeLessThanOrEqual(4);
      for (const r of receiver.at('/held')) expect(ids.has(r.json.event_id)).toBe(true);
      expect(await eventually(async () => held() === 0, 5000), 'nothing held for purged events').toBe(true);
    } finally {
      receiver.respond = () => ({});
    }
  });
});
