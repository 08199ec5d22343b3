import { verify as verifyGithubStyle } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import {
  createSubscription,
  emit,
  FAST_WEBHOOKS,
  getEvent,
  getSubscription,
  until,
} from './webhook-fixtures.js';

const standard = (secret: string) => new Webhook(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`);

describe('webhook delivery', { timeout: 30_000 }, () => {
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
  afterEach(() => {
    vi.useRealTimers();
    receiver.respond = () => ({});
  });

  it('posts the event signed both ways, verifiable with standardwebhooks and @octokit/webhooks-methods', async () => {
    const secret = 'a-test-secret-of-some-length';
    const sub = await createSubscription(t, admin, {
      name: 'signed',
      event_patterns: ['order.*'],
      webhook_config: { url: `${receiver.url}/signed`, secret },
    });
    const id = await emit(t, admin, {
      event_type: 'order.created',
      source: 'shop',
      priority: 7,
      data: { order: 42, note: 'ünïcödé ✓' },
      metadata: { correlation_id: 'corr-1' },
    });
    await until(() => receiver.at('/signed').length === 1, 'the delivery');
    const req = receiver.at('/signed')[0]!;

    expect(req.json).toMatchObject({
      event_id: id,
      event_type: 'order.created',
      source: 'shop',
      priority: 7,
      data: { order: 42, note: 'ünïcödé ✓' },
      metadata: { correlation_id: 'corr-1' },
      subscription_id: sub.id,
      attempt: 1,
    });
    expect(Object.keys(req.json).sort()).toEqual(
      [
        'attempt',
        'data',
        'event_id',
        'event_type',
        'metadata',
        'priority',
        'sequence',
        'source',
        'subscription_id',
        'timestamp',
      ].sort(),
    );
    expect(req.json.sequence).toBeGreaterThan(0);
    const h = req.headers;
    expect(h['content-type']).toBe('application/json');
    expect(h['user-agent']).toMatch(/^Platform-Webhooks\/\d+\.\d+\.\d+/);
    expect(h['x-platform-event-id']).toBe(id);
    expect(h['x-platform-event-type']).toBe('order.created');
    expect(h['x-platform-delivery-id']).toMatch(/^dlv_/);
    expect(h['webhook-id']).toBe(h['x-platform-delivery-id']);
    expect(Math.abs(Number(h['x-platform-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(h['webhook-timestamp']).toBe(h['x-platform-timestamp']);
    expect(h['x-platform-replay']).toBeUndefined();

    // GitHub style: sha256=<hex HMAC of the raw body>
    expect(h['x-platform-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(await verifyGithubStyle(secret, req.body, String(h['x-platform-signature-256']))).toBe(true);
    // Standard Webhooks: the library checks the signature and the timestamp's freshness.
    expect(standard(secret).verify(req.body, h as Record<string, string>)).toMatchObject({ event_id: id });

    await until(async () => (await getEvent(t, admin, id)).status === 'processed', 'status processed');
    const event = await getEvent(t, admin, id);
    expect(event.delivery_info).toMatchObject({
      total_subscribers: 1,
      successful_deliveries: 1,
      failed_deliveries: 0,
      pending_deliveries: 0,
    });
    expect(event.delivery_info.delivery_attempts).toEqual([
      expect.objectContaining({ subscriber: sub.id, status: 'delivered', attempt: 1, response_status: 200 }),
    ]);
    expect(event.delivery_info.delivery_attempts[0].processing_time_ms).toBeGreaterThan(0);
    const audit = await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin });
    expect(audit.data.data.audit_trail.map((e: { action: string }) => e.action)).toEqual([
      'event_emitted',
      'event_delivered',
    ]);
    await until(async () => (await getSubscription(t, admin, sub.id)).events_delivered === 1, 'the counter');
    const view = await getSubscription(t, admin, sub.id);
    expect(view).toMatchObject({ status: 'active', events_delivered: 1, events_failed: 0, success_rate: 1 });
    expect(Date.parse(view.last_delivery)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('takes a 2xx with a long body as delivered (read up to 64 KiB, then cut) and keeps delivering to that target', async () => {
    receiver.respond = (req) => (req.path === '/chatty' ? { body: 'x'.repeat(300_000) } : {});
    await createSubscription(t, admin, {
      event_patterns: ['chatty.*'],
      webhook_config: { url: `${receiver.url}/chatty` },
    });
    const first = await emit(t, admin, { event_type: 'chatty.one' });
    await until(async () => (await getEvent(t, admin, first)).status === 'processed', 'the first delivery');
    const second = await emit(t, admin, { event_type: 'chatty.two' });
    await until(async () => (await getEvent(t, admin, second)).status === 'processed', 'the second delivery');
    for (const id of [first, second]) {
      expect((await getEvent(t, admin, id)).delivery_info.delivery_attempts).toEqual([
        expect.objectContaining({ status: 'delivered', attempt: 1, response_status: 200 }),
      ]);
    }
    expect(receiver.at('/chatty')).toHaveLength(2);
  });

  it('fails verification of a tampered body and of a timestamp too old to accept', async () => {
    const secret = 'another-secret-for-tampering';
    await createSubscription(t, admin, {
      event_patterns: ['tamper.*'],
      webhook_config: { url: `${receiver.url}/tamper`, secret },
    });
    await emit(t, admin, { event_type: 'tamper.test', data: { amount: 10 } });
    await until(() => receiver.at('/tamper').length === 1, 'the delivery');
    const req = receiver.at('/tamper')[0]!;
    const headers = req.headers as Record<string, string>;
    const tampered = req.body.replace('"amount":10', '"amount":1000');
    expect(tampered).not.toBe(req.body);

    expect(await verifyGithubStyle(secret, tampered, headers['x-platform-signature-256']!)).toBe(false);
    expect(() => standard(secret).verify(tampered, headers)).toThrow();
    expect(await verifyGithubStyle('the-wrong-secret', req.body, headers['x-platform-signature-256']!)).toBe(
      false,
    );
    expect(() => standard(secret).verify(req.body, headers)).not.toThrow();

    // The same request presented ten minutes later is refused: the signed timestamp is too old.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 10 * 60_000);
    expect(() => standard(secret).verify(req.body, headers)).toThrow(/too old/i);
  });

  it('sends confidential data in full, and nothing for events no subscription matches', async () => {
    await createSubscription(t, admin, {
      event_patterns: ['secret.thing'],
      webhook_config: { url: `${receiver.url}/confidential` },
    });
    const unmatched = await emit(t, admin, { event_type: 'nobody.listens' });
    const id = await emit(t, admin, {
      event_type: 'secret.thing',
      security_level: 'confidential',
      data: { card: '4111' },
    });
    await until(() => receiver.at('/confidential').length === 1, 'the delivery');
    expect(receiver.at('/confidential')[0]!.json).toMatchObject({ event_id: id, data: { card: '4111' } });
    expect((await getEvent(t, admin, unmatched)).status).toBe('processed');
  });
});
