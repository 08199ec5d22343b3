import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getEvent, until } from '../webhooks/webhook-fixtures.js';

/**
 * Subscriptions belong to their creator (decisions §2), so what `GET /events/{id}` tells about deliveries is
 * cut to the reader's own subscriptions unless the reader is an admin: other users' subscription ids, answers
 * and errors (which name their targets) are not shown, nor counted.
 */
describe('delivery information of an event, by reader', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let ann: { id: string; access: string };
  let bob: { id: string; access: string };
  let carol: { id: string; access: string };
  let receiver: Receiver;
  /** An address nothing listens on: Bob's deliveries fail with an error naming it. */
  let deadTarget: string;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    ann = await t.createUser('ann', ['user']);
    bob = await t.createUser('bob', ['user']);
    carol = await t.createUser('carol', ['user']);
    receiver = new Receiver();
    await receiver.start();
    const dead = new Receiver();
    deadTarget = await dead.start();
    await dead.close();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it("shows a user only their own subscriptions' deliveries; an admin sees all", async () => {
    const annSub = await createSubscription(t, ann.access, {
      event_patterns: ['visible.*'],
      webhook_config: { url: `${receiver.url}/ann` },
    });
    const bobSub = await createSubscription(t, bob.access, {
      event_patterns: ['visible.*'],
      webhook_config: { url: `${deadTarget}/bob-secret-path`, retry_policy: { max_attempts: 1 } },
    });
    const id = await emit(t, admin, { event_type: 'visible.thing', data: { n: 1 } });
    await until(async () => (await getEvent(t, admin, id)).status === 'failed', 'the event to settle');

    const all = (await getEvent(t, admin, id)).delivery_info;
    expect(all).toMatchObject({
      total_subscribers: 2,
      successful_deliveries: 1,
      failed_deliveries: 1,
      pending_deliveries: 0,
    });
    expect(all.delivery_attempts.map((a: { subscriber: string }) => a.subscriber).sort()).toEqual(
      [annSub.id, bobSub.id].sort(),
    );
    const bobsAttempt = all.delivery_attempts.find((a: { subscriber: string }) => a.subscriber === bobSub.id);
    expect(bobsAttempt.error).toContain(new URL(deadTarget).port);

    const annView = await getEvent(t, ann.access, id);
    expect(annView.status).toBe('failed');
    expect(annView.delivery_info).toMatchObject({
      total_subscribers: 1,
      successful_deliveries: 1,
      failed_deliveries: 0,
      pending_deliveries: 0,
    });
    expect(annView.delivery_info.delivery_attempts).toHaveLength(1);
    expect(annView.delivery_info.delivery_attempts[0]).toMatchObject({
      subscriber: annSub.id,
      status: 'delivered',
      response_status: 200,
    });
    expect(JSON.stringify(annView)).not.toContain(bobSub.id);
    expect(JSON.stringify(annView)).not.toContain(new URL(deadTarget).port);

    const bobView = (await getEvent(t, bob.access, id)).delivery_info;
    expect(bobView).toMatchObject({ total_subscribers: 1, successful_deliveries: 0, failed_deliveries: 1 });
    expect(bobView.delivery_attempts.map((a: { subscriber: string }) => a.subscriber)).toEqual([bobSub.id]);

    // A user without subscriptions of their own sees the event and none of its deliveries.
    const carolView = (await getEvent(t, carol.access, id)).delivery_info;
    expect(carolView).toEqual({
      total_subscribers: 0,
      successful_deliveries: 0,
      failed_deliveries: 0,
      pending_deliveries: 0,
      delivery_attempts: [],
    });
  });
});
