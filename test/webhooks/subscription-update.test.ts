import { createHmac } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

describe('updating a webhook subscription', { timeout: 30_000 }, () => {
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
  });

  it('sends an event emitted after the update answered to the new url, signed with the new secret', async () => {
    const sub = await createSubscription(t, admin, {
      name: 'moving',
      event_patterns: ['moving.*'],
      webhook_config: { url: `${receiver.url}/before`, secret: 'the-old-secret-1' },
    });
    // Deliveries right before the change: the dispatcher has just looked at its subscriptions. They are made
    // before the update is sent (one still waiting then would rightly go to the new url instead).
    for (let n = 1; n <= 3; n++) await emit(t, admin, { event_type: 'moving.one', data: { n } });
    await until(() => receiver.at('/before').length === 3, 'the earlier deliveries');
    // The clock stands still from here, so the change must reach the dispatcher without waiting for time to pass.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });

    const res = await t.request('PUT', `/api/v1/events/subscriptions/${sub.id}`, {
      token: admin,
      body: { webhook_config: { url: `${receiver.url}/after`, secret: 'the-new-secret-2' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.data.data.subscription.webhook_url).toBe(`${receiver.url}/after`);
    const id = await emit(t, admin, { event_type: 'moving.two', data: { n: 2 } });

    await until(() => receiver.requests.some((r) => r.json?.event_id === id), 'the second delivery');
    const second = receiver.requests.find((r) => r.json?.event_id === id)!;
    expect(second.path).toBe('/after');
    const expected = `sha256=${createHmac('sha256', 'the-new-secret-2').update(second.body).digest('hex')}`;
    expect(second.headers['x-platform-signature-256']).toBe(expected);
    expect(receiver.at('/before')).toHaveLength(3);
    expect(receiver.requests).toHaveLength(4);
  });
});
