import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getEvent, until } from './webhook-fixtures.js';

describe('batched webhook delivery', { timeout: 30_000 }, () => {
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

  it('sends full batches at once and the rest after max_wait_time_seconds, signed like single deliveries', async () => {
    const secret = 'batch-secret-0123456789';
    const sub = await createSubscription(t, admin, {
      event_patterns: ['bulk.*'],
      webhook_config: { url: `${receiver.url}/batch`, secret },
      batch_config: { enabled: true, max_batch_size: 5, max_wait_time_seconds: 1 },
    });
    const ids: string[] = [];
    const started = Date.now();
    for (let i = 0; i < 12; i++) ids.push(await emit(t, admin, { event_type: 'bulk.item', data: { i } }));
    await until(
      () => receiver.at('/batch').reduce((n, r) => n + r.json.events.length, 0) === 12,
      'all 12 events in batches',
    );
    const batches = receiver.at('/batch');
    for (const b of batches) {
      expect(b.json).toMatchObject({ subscription_id: sub.id });
      expect(b.json.batch_id).toMatch(/^bat_/);
      expect(b.json.events.length).toBeLessThanOrEqual(5);
      expect(b.headers['x-platform-batch-id']).toBe(b.json.batch_id);
      expect(b.headers['webhook-id']).toBe(b.json.batch_id);
      expect(b.headers['x-platform-event-count']).toBe(String(b.json.events.length));
      const wh = new Webhook(`whsec_${Buffer.from(secret).toString('base64')}`);
      expect(() => wh.verify(b.body, b.headers as Record<string, string>)).not.toThrow();
      for (const e of b.json.events) {
        expect(e).toMatchObject({ event_type: 'bulk.item', subscription_id: sub.id, attempt: 1 });
        expect(e.delivery_id).toMatch(/^dlv_/);
      }
    }
    const delivered = batches.flatMap((b) => b.json.events.map((e: { event_id: string }) => e.event_id));
    expect(delivered.sort()).toEqual([...ids].sort());
    // 12 = 5 + 5 + 2: the last two waited for max_wait_time_seconds rather than a full batch.
    expect(batches.length).toBeGreaterThanOrEqual(3);
    const partial = batches.at(-1)!;
    expect(partial.json.events.length).toBeLessThan(5);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);

    await until(async () => (await getEvent(t, admin, ids[11]!)).status === 'processed', 'processed');
    const rows = await t.platform.context.database.db
      .selectFrom('delivery_attempts')
      .select(['batch_id', 'status'])
      .where('subscription_id', '=', sub.id)
      .execute();
    expect(rows).toHaveLength(12);
    expect(new Set(rows.map((r) => r.batch_id))).toEqual(new Set(batches.map((b) => b.json.batch_id)));
  });

  it('retries a failed batch as a whole', async () => {
    let fail = true;
    receiver.respond = (req) => (req.path === '/batch-retry' && fail ? { status: 500 } : {});
    await createSubscription(t, admin, {
      event_patterns: ['rebulk.*'],
      webhook_config: { url: `${receiver.url}/batch-retry`, retry_policy: { max_attempts: 3 } },
      batch_config: { enabled: true, max_batch_size: 3, max_wait_time_seconds: 0 },
    });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await emit(t, admin, { event_type: 'rebulk.item', data: { i } }));
    await until(() => receiver.at('/batch-retry').length >= 1, 'the first batch');
    fail = false;
    await until(
      async () =>
        (await Promise.all(ids.map((id) => getEvent(t, admin, id)))).every((e) => e.status === 'processed'),
      'all processed',
    );
    const last = receiver.at('/batch-retry').at(-1)!;
    expect(last.json.events.some((e: { attempt: number }) => e.attempt === 2)).toBe(true);
    receiver.respond = () => ({});
  });
});
