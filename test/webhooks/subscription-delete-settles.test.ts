import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, getEvent, until } from './webhook-fixtures.js';

/**
 * Deleting a subscription deletes its deliveries; events that were waiting only for those settle at once to
 * what they would be without them (`processed`, or `failed` when another subscription's delivery failed), not
 * `processing` forever.
 */
describe('deleting a subscription with deliveries waiting', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform({ webhooks: { poll_interval_ms: 50 } });
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    // `/retry` and `/fail`: fail (a retry waits an hour). `/hang`: never answers. Anything else: 200.
    receiver.respond = (req) =>
      req.path === '/hang'
        ? { hang: true }
        : req.path === '/retry' || req.path === '/fail'
          ? { status: 500 }
          : {};
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const waiting = { max_attempts: 5, retry_delay_seconds: 3600, exponential_backoff: false };
  const remove = async (id: string) => {
    const res = await t.request('DELETE', `/api/v1/events/subscriptions/${id}`, { token: admin });
    expect(res.statusCode, res.body).toBe(200);
  };
  const processingIds = async (type: string) => {
    const res = await t.request('GET', `/api/v1/events?status=processing&event_type=${type}`, {
      token: admin,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.data.data.events.map((e: { event_id: string }) => e.event_id);
  };

  it('settles to processed an event whose only delivery waited for a retry', async () => {
    const sub = await createSubscription(t, admin, {
      event_patterns: ['alone.*'],
      webhook_config: { url: `${receiver.url}/retry`, retry_policy: waiting },
    });
    const id = await emit(t, admin, { event_type: 'alone.event' });
    await until(
      async () => (await getEvent(t, admin, id)).delivery_info.delivery_attempts.length === 1,
      'a try',
    );
    expect((await getEvent(t, admin, id)).status).toBe('processing');
    expect(await processingIds('alone.event')).toEqual([id]);

    await remove(sub.id);
    const event = await getEvent(t, admin, id);
    expect(event.status).toBe('processed');
    expect(event.delivery_info.pending_deliveries).toBe(0);
    expect(await processingIds('alone.event')).toEqual([]);
  });

  it('settles to processed an event whose delivery was under way, and to failed one another subscription failed', async () => {
    const hanging = await createSubscription(t, admin, {
      event_patterns: ['mixed.*'],
      webhook_config: { url: `${receiver.url}/hang`, timeout_seconds: 60 },
    });
    await createSubscription(t, admin, {
      event_patterns: ['mixed.ok'],
      webhook_config: { url: `${receiver.url}/ok` },
    });
    await createSubscription(t, admin, {
      event_patterns: ['mixed.bad'],
      webhook_config: { url: `${receiver.url}/fail`, retry_policy: { max_attempts: 1 } },
    });
    const ok = await emit(t, admin, { event_type: 'mixed.ok' });
    const bad = await emit(t, admin, { event_type: 'mixed.bad' });
    await until(() => receiver.at('/hang').length === 2, 'both events under way to the hanging target');
    await until(
      async () =>
        (await getEvent(t, admin, ok)).delivery_info.successful_deliveries === 1 &&
        (await getEvent(t, admin, bad)).delivery_info.failed_deliveries === 1,
      'the other subscriptions to settle',
    );
    expect((await getEvent(t, admin, ok)).status).toBe('processing');
    expect((await getEvent(t, admin, bad)).status).toBe('processing');

    await remove(hanging.id);
    expect((await getEvent(t, admin, ok)).status).toBe('processed');
    const failed = await getEvent(t, admin, bad);
    expect(failed.status).toBe('failed');
    expect(failed.delivery_info).toMatchObject({ total_subscribers: 1, pending_deliveries: 0 });
    expect(await processingIds('mixed.*')).toEqual([]);
  });
});
