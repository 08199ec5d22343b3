import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, getEvent, getSubscription, until } from './webhook-fixtures.js';

/**
 * Retry policies at a twentieth of their time (`webhooks.retry_delay_scale`): a 1 s delay waits 50 ms, so
 * backoff is observable in milliseconds. A target's Retry-After is honoured unscaled.
 */
describe('webhook retries, timeouts and subscription health', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform({
      webhooks: { retry_delay_scale: 0.05, poll_interval_ms: 50 },
      events: { subscription_error_threshold: 3 },
    });
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });
  afterEach(() => {
    receiver.respond = () => ({});
  });

  const actions = async (id: string) =>
    (await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin })).data.data.audit_trail.map(
      (e: { action: string }) => e.action,
    );

  it('retries a failing target with exponentially growing delays, re-signing every attempt', async () => {
    const secret = 'retry-secret-123456';
    receiver.respond = (req) =>
      req.path === '/flaky' && receiver.at('/flaky').length <= 3 ? { status: 500 } : {};
    const sub = await createSubscription(t, admin, {
      event_patterns: ['flaky.*'],
      webhook_config: {
        url: `${receiver.url}/flaky`,
        secret,
        retry_policy: { max_attempts: 5, retry_delay_seconds: 2, exponential_backoff: true },
      },
    });
    const id = await emit(t, admin, { event_type: 'flaky.event', data: { n: 1 } });
    await until(() => receiver.at('/flaky').length === 4, 'four attempts');
    const reqs = receiver.at('/flaky');
    expect(reqs.map((r) => r.json.attempt)).toEqual([1, 2, 3, 4]);
    expect(new Set(reqs.map((r) => r.headers['x-platform-delivery-id'])).size).toBe(1);
    const wh = new Webhook(`whsec_${Buffer.from(secret).toString('base64')}`);
    for (const r of reqs) expect(() => wh.verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    // 2 s × 2^(n−1) × 0.05 = 100, 200, 400 ms, each −20 % at the least (a loaded host only adds to them).
    const gaps = reqs.slice(1).map((r, i) => r.at - reqs[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(75);
    expect(gaps[1]).toBeGreaterThanOrEqual(155);
    expect(gaps[2]).toBeGreaterThanOrEqual(315);

    await until(async () => (await getEvent(t, admin, id)).status === 'processed', 'processed');
    const event = await getEvent(t, admin, id);
    expect(event.delivery_info.delivery_attempts.map((a: { status: string }) => a.status)).toEqual([
      'failed',
      'failed',
      'failed',
      'delivered',
    ]);
    expect(event.delivery_info.delivery_attempts[0]).toMatchObject({
      response_status: 500,
      error: 'HTTP 500',
    });
    expect(await actions(id)).toEqual([
      'event_emitted',
      'delivery_retried',
      'delivery_retried',
      'delivery_retried',
      'event_delivered',
    ]);
    // Each retry's entry tells what went wrong and when the next attempt was due (read from its attempt row).
    const trail = (await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin })).data.data
      .audit_trail;
    expect(trail[1]).toMatchObject({
      actor: 'webhook_dispatcher',
      details: { subscription_id: sub.id, attempt: 1, response_status: 500, error: 'HTTP 500' },
    });
    for (const entry of trail.slice(1, 4)) {
      expect(Date.parse(entry.details.next_attempt_at)).toBeGreaterThan(Date.parse(entry.timestamp));
    }
    expect(trail[4].details).toMatchObject({ attempt: 4, response_status: 200 });
    expect(trail[4].details).not.toHaveProperty('next_attempt_at');
    expect(trail[4].details).not.toHaveProperty('error');
    expect(await getSubscription(t, admin, sub.id)).toMatchObject({ events_delivered: 1, events_failed: 0 });
  });

  it('gives up after max_attempts: the event fails with WEBHOOK_DELIVERY_FAILED', async () => {
    receiver.respond = () => ({ status: 503 });
    const sub = await createSubscription(t, admin, {
      event_patterns: ['doomed.*'],
      webhook_config: {
        url: `${receiver.url}/doomed`,
        retry_policy: { max_attempts: 3, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    const id = await emit(t, admin, { event_type: 'doomed.event' });
    await until(async () => (await getEvent(t, admin, id)).status === 'failed', 'status failed');
    expect(receiver.at('/doomed')).toHaveLength(3);
    const event = await getEvent(t, admin, id);
    expect(event.delivery_info).toMatchObject({ successful_deliveries: 0, failed_deliveries: 1 });
    expect(event.delivery_info.delivery_attempts.at(-1).error).toMatch(/^WEBHOOK_DELIVERY_FAILED: HTTP 503/);
    const trail = (await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin })).data.data
      .audit_trail;
    expect(trail.at(-1)).toMatchObject({
      action: 'delivery_failed',
      actor: 'webhook_dispatcher',
      details: {
        error_code: 'WEBHOOK_DELIVERY_FAILED',
        attempt: 3,
        response_status: 503,
        error: expect.stringMatching(/^HTTP 503/),
      },
    });
    const view = await getSubscription(t, admin, sub.id);
    expect(view).toMatchObject({ status: 'active', events_delivered: 0, events_failed: 1, success_rate: 0 });
    expect(view.last_error).toMatch(/HTTP 503/);
  });

  it("honours the target's Retry-After", async () => {
    receiver.respond = (req) =>
      req.path === '/later' && receiver.at('/later').length === 1
        ? { status: 429, headers: { 'retry-after': '1' } }
        : {};
    await createSubscription(t, admin, {
      event_patterns: ['later.*'],
      webhook_config: {
        url: `${receiver.url}/later`,
        retry_policy: { max_attempts: 3, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    await emit(t, admin, { event_type: 'later.event' });
    await until(() => receiver.at('/later').length === 2, 'the second attempt', 5000);
    const [first, second] = receiver.at('/later');
    // The policy alone would wait 50 ms.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it('ends an attempt at timeout_seconds and records the timeout', async () => {
    receiver.respond = (req) => (req.path === '/slow' ? { hang: true } : {});
    const sub = await createSubscription(t, admin, {
      event_patterns: ['slow.*'],
      webhook_config: {
        url: `${receiver.url}/slow`,
        timeout_seconds: 1,
        retry_policy: { max_attempts: 2, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    const id = await emit(t, admin, { event_type: 'slow.event' });
    await until(async () => (await getEvent(t, admin, id)).status === 'failed', 'status failed', 8000);
    const attempts = (await getEvent(t, admin, id)).delivery_info.delivery_attempts;
    expect(attempts).toHaveLength(2);
    for (const a of attempts) {
      expect(a.error).toMatch(/timeout/);
      expect(a.processing_time_ms).toBeGreaterThanOrEqual(950);
      expect(a.processing_time_ms).toBeLessThan(3000);
    }
    expect((await getSubscription(t, admin, sub.id)).events_failed).toBe(1);
  });

  it('keeps delivering to one target while another hangs until its timeout', async () => {
    receiver.respond = (req) => (req.path === '/stuck' ? { hang: true } : {});
    await createSubscription(t, admin, {
      event_patterns: ['busy.*'],
      webhook_config: {
        url: `${receiver.url}/stuck`,
        timeout_seconds: 5,
        retry_policy: { max_attempts: 1, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    await createSubscription(t, admin, {
      event_patterns: ['busy.*'],
      webhook_config: { url: `${receiver.url}/healthy` },
    });
    const started = Date.now();
    for (let i = 0; i < 20; i++) await emit(t, admin, { event_type: 'busy.event', data: { i } });
    await until(() => receiver.at('/healthy').length === 20, 'all deliveries to the healthy target', 4000);
    // Meanwhile the stuck target holds no more than its concurrency, and none of its attempts has ended.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(receiver.at('/stuck').length).toBeLessThanOrEqual(4);
  });

  it('drops the pending retries of an event once it expires', async () => {
    receiver.respond = (req) => (req.path === '/expiring' ? { status: 500 } : {});
    await createSubscription(t, admin, {
      event_patterns: ['expiring.*'],
      // 100 s × 0.05: the retry falls due about 5 s later, after the event expired (3 s leave the first
      // attempt time to happen before the expiry even on a busy machine).
      webhook_config: { url: `${receiver.url}/expiring`, retry_policy: { retry_delay_seconds: 100 } },
    });
    const id = await emit(t, admin, {
      event_type: 'expiring.offer',
      expires_at: new Date(Date.now() + 3000).toISOString(),
    });
    const db = t.platform.context.database.db;
    const outbox = () =>
      db
        .selectFrom('event_outbox')
        .select(['status', 'last_error'])
        .where('event_id', '=', id)
        .executeTakeFirstOrThrow();
    await until(async () => (await outbox()).status === 'dropped', 'the delivery dropped', 12_000);
    expect(await outbox()).toMatchObject({ status: 'dropped', last_error: 'event expired' });
    expect(receiver.at('/expiring')).toHaveLength(1);
    expect((await t.request('GET', `/api/v1/events/${id}`, { token: admin })).statusCode).toBe(410);
    const trail = (await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin })).data.data
      .audit_trail;
    expect(trail.map((e: { action: string }) => e.action)).toEqual([
      'event_emitted',
      'delivery_retried',
      'delivery_dropped',
    ]);
  });

  it('does not follow redirects', async () => {
    receiver.respond = (req) =>
      req.path === '/moved' ? { status: 302, headers: { location: `${receiver.url}/elsewhere` } } : {};
    await createSubscription(t, admin, {
      event_patterns: ['moved.*'],
      webhook_config: { url: `${receiver.url}/moved`, retry_policy: { max_attempts: 1 } },
    });
    const id = await emit(t, admin, { event_type: 'moved.event' });
    await until(async () => (await getEvent(t, admin, id)).status === 'failed', 'status failed');
    expect(receiver.at('/elsewhere')).toHaveLength(0);
    const [attempt] = (await getEvent(t, admin, id)).delivery_info.delivery_attempts;
    expect(attempt).toMatchObject({ response_status: 302 });
    expect(attempt.error).toMatch(/redirects are not followed/);
  });

  it('puts a subscription in error on 410 Gone, stops queueing for it, and enabled: true revives it', async () => {
    let gone = true;
    receiver.respond = (req) => (req.path === '/gone' && gone ? { status: 410 } : {});
    const sub = await createSubscription(t, admin, {
      event_patterns: ['gone.*'],
      webhook_config: { url: `${receiver.url}/gone` },
    });
    const first = await emit(t, admin, { event_type: 'gone.event' });
    await until(async () => (await getSubscription(t, admin, sub.id)).status === 'error', 'status error');
    // The event's status follows right after the outcome's commit (on PostgreSQL in a statement of its own).
    await until(async () => (await getEvent(t, admin, first)).status === 'failed', 'event failed');
    expect(receiver.at('/gone')).toHaveLength(1);

    const ignored = await emit(t, admin, { event_type: 'gone.event' });
    expect((await getEvent(t, admin, ignored)).delivery_info.total_subscribers).toBe(0);

    gone = false;
    const res = await t.request('PATCH', `/api/v1/events/subscriptions/${sub.id}`, {
      token: admin,
      body: { enabled: true },
    });
    expect(res.statusCode).toBe(200);
    expect((await getSubscription(t, admin, sub.id)).status).toBe('active');
    const revived = await emit(t, admin, { event_type: 'gone.event' });
    await until(async () => (await getEvent(t, admin, revived)).status === 'processed', 'revived delivery');
    expect(receiver.at('/gone').at(-1)!.json.event_id).toBe(revived);
  });

  it('puts a subscription in error after events.subscription_error_threshold exhausted deliveries in a row', async () => {
    receiver.respond = (req) => (req.path === '/broken' ? { status: 500 } : {});
    const sub = await createSubscription(t, admin, {
      event_patterns: ['broken.*'],
      webhook_config: { url: `${receiver.url}/broken`, retry_policy: { max_attempts: 1 } },
    });
    for (let i = 0; i < 2; i++) {
      const id = await emit(t, admin, { event_type: 'broken.event' });
      await until(async () => (await getEvent(t, admin, id)).status === 'failed', 'failed');
    }
    expect((await getSubscription(t, admin, sub.id)).status).toBe('active');
    const third = await emit(t, admin, { event_type: 'broken.event' });
    await until(async () => (await getEvent(t, admin, third)).status === 'failed', 'failed');
    await until(async () => (await getSubscription(t, admin, sub.id)).status === 'error', 'status error');
    expect(await getSubscription(t, admin, sub.id)).toMatchObject({ events_failed: 3, success_rate: 0 });
  });
});
