import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginDelivery } from '../../src/webhooks/plugin-consumers.js';
import type { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { emit, FAST_WEBHOOKS, getEvent, until } from './webhook-fixtures.js';

describe('plugin subscribers fed from the outbox', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let dispatcher: WebhookDispatcher;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    dispatcher = t.platform.context.registry.get('webhook_dispatcher') as WebhookDispatcher;
  });
  afterAll(async () => {
    await t.close();
  });

  it('delivers matching events to the consumer, retrying a throwing one with attempts recorded', async () => {
    const received: PluginDelivery[] = [];
    let failures = 1;
    const { subscriptionId } = await dispatcher.plugins.subscribe(
      'search',
      { name: 'index-users', eventPatterns: ['member.*'], retryPolicy: { max_attempts: 3 } },
      async (delivery) => {
        received.push(delivery);
        if (failures-- > 0) throw new Error('index not ready');
      },
    );
    const id = await emit(t, admin, { event_type: 'member.joined', data: { name: 'ann' } });
    await until(async () => (await getEvent(t, admin, id)).status === 'processed', 'processed');
    expect(received.map((d) => d.attempt)).toEqual([1, 2]);
    expect(received[1]).toMatchObject({
      subscriptionId,
      replayId: null,
      event: { event_id: id, event_type: 'member.joined', data: { name: 'ann' }, attempt: 2 },
    });
    expect(received[0]!.deliveryId).toBe(received[1]!.deliveryId);
    const attempts = (await getEvent(t, admin, id)).delivery_info.delivery_attempts;
    expect(attempts.map((a: { status: string }) => a.status)).toEqual(['failed', 'delivered']);
    expect(attempts[0].error).toMatch(/the consumer failed: index not ready/);
    const trail = (await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin })).data.data
      .audit_trail;
    expect(trail.at(-1)).toMatchObject({ action: 'event_delivered', actor: 'plugin:search' });

    const list = await t.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', {
      token: admin,
    });
    expect(list.data.data.subscriptions).toEqual([
      expect.objectContaining({ subscription_id: subscriptionId, plugin_id: 'search', events_delivered: 1 }),
    ]);
  });

  it('records a consumer error holding NUL, a lone surrogate or a megabyte of text, and the deliveries around it', async () => {
    await dispatcher.plugins.subscribe(
      'thrower',
      { name: 'nasty', eventPatterns: ['nasty.*'], retryPolicy: { max_attempts: 1 } },
      async () => {
        throw new Error(`bad \u0000 input \ud800 ${'z'.repeat(1_000_000)}`);
      },
    );
    const fine: string[] = [];
    await dispatcher.plugins.subscribe('calm', { name: 'fine', eventPatterns: ['nasty.*'] }, async (d) => {
      fine.push(d.event.event_id);
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await emit(t, admin, { event_type: 'nasty.thing', data: { i } }));
    await until(async () => {
      for (const id of ids) if ((await getEvent(t, admin, id)).status !== 'failed') return false;
      return true;
    }, 'every event settled');
    expect(fine.sort()).toEqual([...ids].sort());
    const attempts = (await getEvent(t, admin, ids[0]!)).delivery_info.delivery_attempts as {
      status: string;
      error: string | null;
    }[];
    const failed = attempts.find((a) => a.status === 'failed')!;
    expect(failed.error).toContain('the consumer failed: bad \ufffd input \ufffd zzz');
    expect(failed.error!.length).toBeLessThan(2_100);
  });

  it('reuses the subscription when the plugin subscribes again, and times out a consumer that hangs', async () => {
    const first = await dispatcher.plugins.subscribe(
      'slowpoke',
      { name: 'wait', eventPatterns: ['lazy.*'], timeoutSeconds: 1, retryPolicy: { max_attempts: 1 } },
      () => new Promise<void>(() => {}),
    );
    const again = await dispatcher.plugins.subscribe(
      'slowpoke',
      { name: 'wait', eventPatterns: ['lazy.*'], timeoutSeconds: 1, retryPolicy: { max_attempts: 1 } },
      ({ signal }) =>
        new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    );
    expect(again.subscriptionId).toBe(first.subscriptionId);
    const id = await emit(t, admin, { event_type: 'lazy.event' });
    await until(async () => (await getEvent(t, admin, id)).status === 'failed', 'failed', 5000);
    const [attempt] = (await getEvent(t, admin, id)).delivery_info.delivery_attempts;
    expect(attempt.error).toMatch(/WEBHOOK_DELIVERY_FAILED: timeout/);
  });

  it('leaves deliveries of a plugin with no consumer here waiting until one registers', async () => {
    const { subscriptionId, unsubscribe } = await dispatcher.plugins.subscribe(
      'later',
      { name: 'queue', eventPatterns: ['deferred.*'] },
      () => {},
    );
    unsubscribe();
    const id = await emit(t, admin, { event_type: 'deferred.event' });
    await new Promise((r) => setTimeout(r, 300));
    expect((await getEvent(t, admin, id)).delivery_info.pending_deliveries).toBe(1);
    const got: string[] = [];
    dispatcher.consumers.register(subscriptionId, ({ event }) => {
      got.push(event.event_id);
    });
    await until(() => got.includes(id), 'the delivery once a consumer registered');
  });
});
