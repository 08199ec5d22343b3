import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { startSmtpSink } from '../mail/smtp-sink.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getSubscription, until } from './webhook-fixtures.js';

// 0.0004 h = 1.44 s of failing every attempt.
const FAILING_HOURS = 0.0004;

describe('a subscription failing every attempt for webhooks.disable_after_failing_hours', {
  timeout: 60_000,
}, () => {
  let t: TestPlatform;
  let sink: Awaited<ReturnType<typeof startSmtpSink>>;
  let admin: string;
  let ann: { id: string; access: string };
  let receiver: Receiver;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startPlatform({
      ...FAST_WEBHOOKS,
      webhooks: { ...FAST_WEBHOOKS.webhooks, disable_after_failing_hours: FAILING_HOURS },
      mail: { smtp_url: sink.url },
    });
    admin = await t.adminToken();
    ann = await t.createUser('ann');
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = (req) => ({ status: req.path === '/broken' ? 503 : 200 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
    await sink.close();
  });

  it('is put in error, with a platform event and an e-mail to its owner; re-enabling answers missed_since', async () => {
    // Many retries, spaced by milliseconds: one delivery alone keeps trying for longer than the limit, and
    // the count of exhausted deliveries (events.subscription_error_threshold, 10) is never reached.
    const retry = { max_attempts: 20, retry_delay_seconds: 1, exponential_backoff: true };
    const broken = await createSubscription(t, ann.access, {
      name: 'orders to the broken target',
      event_patterns: ['pause.*'],
      webhook_config: { url: `${receiver.url}/broken`, retry_policy: retry },
    });
    const healthy = await createSubscription(t, ann.access, {
      event_patterns: ['pause.*'],
      webhook_config: { url: `${receiver.url}/healthy`, retry_policy: retry },
    });
    await emit(t, ann.access, { event_type: 'pause.first', data: {} });
    await until(
      async () => (await getSubscription(t, ann.access, broken.id)).status === 'error',
      'the broken subscription to be put in error',
      20_000,
    );
    // Not before the time had passed: from the first failed try the receiver saw to the pause (the record's
    // `updated_at`). The server counts from its first try's start, a send earlier than its receipt: the margin.
    // (The last try's receipt is no bound: its result is written in a later batch, and the pause with it.)
    const tries = receiver.at('/broken');
    const sub = await getSubscription(t, ann.access, broken.id);
    const firstTry = performance.timeOrigin + tries[0]!.at;
    expect(Date.parse(sub.updated_at) - firstTry).toBeGreaterThanOrEqual(FAILING_HOURS * 3_600_000 - 100);
    expect(sub.events_failed).toBe(0);
    expect((await getSubscription(t, ann.access, healthy.id)).status).toBe('active');
    const triesBefore = receiver.at('/broken').length;
    expect(triesBefore).toBeGreaterThan(2);

    // The platform event, for administrators.
    let events: any[] = [];
    await until(async () => {
      const res = await t.request('GET', '/api/v1/events?event_type=webhook.subscription.disabled', {
        token: admin,
      });
      events = res.data.data.events;
      return events.length > 0;
    }, 'the webhook.subscription.disabled event');
    expect(events).toHaveLength(1);
    const detail = await t.request('GET', `/api/v1/events/${events[0].event_id}`, { token: admin });
    expect(detail.data.data.event.data).toMatchObject({
      subscription_id: broken.id,
      owner_id: ann.id,
      reason: 'failing_too_long',
    });
    // Not a family its owner (a plain user) reads, nor one anyone may emit.
    const hidden = await t.request('GET', '/api/v1/events?event_type=webhook.subscription.disabled', {
      token: ann.access,
    });
    expect(hidden.data.data.events).toHaveLength(0);
    const forged = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'webhook.subscription.disabled', data: {} },
    });
    expect(forged.statusCode).not.toBe(201);

    // The e-mail to its owner.
    const mail = await sink.waitFor('ann@example.test');
    expect(mail.subject).toMatch(/Webhook.subscription/);
    expect(mail.body).toContain('orders to the broken target');
    expect(mail.body).toContain(broken.id);
    expect(mail.body).toContain('/recover');

    // Nothing more is sent to it while in error (once a try under way when it moved has ended).
    await new Promise((r) => setTimeout(r, 300));
    const settledTries = receiver.at('/broken').length;
    await new Promise((r) => setTimeout(r, 700));
    expect(receiver.at('/broken').length).toBe(settledTries);

    const enabled = await t.request('PATCH', `/api/v1/events/subscriptions/${broken.id}`, {
      token: ann.access,
      body: { enabled: true },
    });
    expect(enabled.statusCode, enabled.body).toBe(200);
    const missedSince = Date.parse(enabled.data.data.missed_since);
    // Since the first failed attempt (as the receiver saw it; the platform's clock is the same machine's).
    expect(Math.abs(missedSince - firstTry)).toBeLessThan(500);
  });
});
