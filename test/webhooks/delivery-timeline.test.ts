import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

const MINUTE = 60_000;

describe("a subscription's delivery timeline", { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let ann: { id: string; access: string };
  let bob: { id: string; access: string };
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    ann = await t.createUser('ann');
    bob = await t.createUser('bob');
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = (req) => ({ status: req.json?.data?.refuse ? 500 : 200 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const timeline = (id: string, query = '', token = ann.access) =>
    t.request('GET', `/api/v1/events/subscriptions/${id}/delivery-timeline${query}`, { token });

  it('counts delivered and failed attempts per bucket, for its owner only', async () => {
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['line.*'],
      webhook_config: {
        url: `${receiver.url}/line`,
        retry_policy: { max_attempts: 2, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    const other = await createSubscription(t, ann.access, {
      event_patterns: ['elsewhere.*'],
      webhook_config: { url: `${receiver.url}/elsewhere` },
    });
    for (const refuse of [false, false, true])
      await emit(t, ann.access, { event_type: 'line.x', data: { refuse } });
    await emit(t, ann.access, { event_type: 'elsewhere.x', data: {} });
    // Two delivered, and the refused one tried twice (max_attempts 2): 4 requests on /line.
    await until(
      async () => receiver.at('/line').length === 4 && receiver.at('/elsewhere').length === 1,
      'all tried',
    );
    await until(async () => {
      const res = await timeline(sub.id);
      return res.data.data?.totals?.failed === 2;
    }, 'the failed attempts recorded');

    const hourAgo = new Date(Date.now() - 60 * MINUTE).toISOString();
    const res = await timeline(sub.id, `?resolution=1m&start_time=${hourAgo}`);
    expect(res.statusCode).toBe(200);
    const data = res.data.data;
    expect(data.totals).toEqual({ delivered: 2, failed: 2 });
    expect(data.time_range.resolution).toBe('1m');
    expect(data.time_range.start).toBe(hourAgo);
    // Buckets are whole minutes, oldest first, and add up to the totals.
    for (const b of data.buckets) expect(Date.parse(b.timestamp) % MINUTE).toBe(0);
    const sum = data.buckets.reduce(
      (acc: { d: number; f: number }, b: { delivered: number; failed: number }) => ({
        d: acc.d + b.delivered,
        f: acc.f + b.failed,
      }),
      { d: 0, f: 0 },
    );
    expect(sum).toEqual({ d: 2, f: 2 });
    // The default is the last 24 hours by the hour; a range before the attempts holds none.
    const byDefault = (await timeline(sub.id)).data.data;
    expect(byDefault.time_range.resolution).toBe('1h');
    expect(Date.parse(byDefault.time_range.end) - Date.parse(byDefault.time_range.start)).toBe(
      24 * 60 * MINUTE,
    );
    expect(byDefault.totals).toEqual({ delivered: 2, failed: 2 });
    const before = await timeline(
      sub.id,
      `?start_time=${new Date(Date.now() - 3 * 60 * MINUTE).toISOString()}&end_time=${new Date(Date.now() - 2 * 60 * MINUTE).toISOString()}&resolution=5m`,
    );
    expect(before.data.data).toMatchObject({ buckets: [], totals: { delivered: 0, failed: 0 } });
    // The other subscription's attempt is its own.
    expect((await timeline(other.id)).data.data.totals).toEqual({ delivered: 1, failed: 0 });

    // Someone else's subscription is not found; too many buckets and a reversed range are refused.
    const foreign = await timeline(sub.id, '', bob.access);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.data.error.code).toBe('SUBSCRIPTION_NOT_FOUND');
    const tooMany = await timeline(sub.id, '?resolution=1m&start_time=2020-01-01T00:00:00Z');
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'resolution' } });
    const reversed = await timeline(sub.id, '?start_time=2030-01-01T00:00:00Z&end_time=2029-01-01T00:00:00Z');
    expect(reversed.statusCode).toBe(422);
  });
});
