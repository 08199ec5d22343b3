import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getEvent, until } from './webhook-fixtures.js';

// Results are written as they come back, not in the order their tries began: a slow delivery's result, written
// last, must not move the subscription's last_delivery back to when that older try began.
describe("a subscription's last_delivery", { timeout: 30_000 }, () => {
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

  it('is the latest delivery, also when an earlier one finishes after it', async () => {
    const sub = await createSubscription(t, admin, {
      event_patterns: ['latest.*'],
      webhook_config: { url: `${receiver.url}/latest` },
    });
    receiver.respond = (r) => (r.json?.data?.slow ? { delayMs: 800 } : {});
    try {
      const slow = await emit(t, admin, { event_type: 'latest.one', data: { slow: true } });
      await until(() => receiver.at('/latest').length === 1, 'the slow delivery under way');
      await new Promise((r) => setTimeout(r, 20));
      const fast = await emit(t, admin, { event_type: 'latest.two', data: {} });
      for (const id of [fast, slow]) {
        await until(async () => (await getEvent(t, admin, id)).status === 'processed', `${id} processed`);
      }
      const [late] = (await getEvent(t, admin, fast)).delivery_info.delivery_attempts;
      const [early] = (await getEvent(t, admin, slow)).delivery_info.delivery_attempts;
      expect(late.delivery_time > early.delivery_time).toBe(true);
      const read = await t.request('GET', `/api/v1/events/subscriptions/${sub.id}`, { token: admin });
      expect(read.data.data.subscription).toMatchObject({
        events_delivered: 2,
        last_delivery: late.delivery_time,
      });
    } finally {
      receiver.respond = () => ({});
    }
  });
});
