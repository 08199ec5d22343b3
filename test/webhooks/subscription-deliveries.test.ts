import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("a subscription's deliveries", { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let ann: { id: string; access: string };
  let bob: { id: string; access: string };
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    ann = await t.createUser('ann');
    bob = await t.createUser('bob');
    receiver = new Receiver();
    await receiver.start();
    // Events whose data asks for it are refused; the rest are taken.
    receiver.respond = (req) => ({
      status: req.json?.data?.refuse ? (req.path === '/slow' ? 503 : 500) : 200,
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const deliveries = (id: string, query = '', token = ann.access) =>
    t.request('GET', `/api/v1/events/subscriptions/${id}/deliveries${query}`, { token });

  it('lists every delivery newest first with its last attempt, filtered by status and paged', async () => {
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['shop.*'],
      webhook_config: {
        url: `${receiver.url}/shop`,
        retry_policy: { max_attempts: 2, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    const ids: string[] = [];
    for (const [type, refuse] of [
      ['shop.ordered', false],
      ['shop.refused', true],
      ['shop.paid', false],
      ['shop.shipped', false],
    ] as const) {
      ids.push(await emit(t, ann.access, { event_type: type, data: { refuse } }));
    }
    await until(async () => {
      const res = await deliveries(sub.id);
      return res.data.data.deliveries.every((d: { status: string }) =>
        ['delivered', 'failed'].includes(d.status),
      );
    }, 'every delivery settled');
    // The receiver really saw them: one request per success, two for the refused one.
    expect(receiver.at('/shop')).toHaveLength(5);

    const res = await deliveries(sub.id);
    expect(res.statusCode).toBe(200);
    const { deliveries: list, pagination } = res.data.data;
    expect(pagination).toEqual({
      page: 1,
      per_page: 20,
      total: 4,
      pages: 1,
      has_next: false,
      has_prev: false,
    });
    expect(list.map((d: { event_id: string }) => d.event_id)).toEqual([...ids].reverse());
    const byType = new Map(list.map((d: { event_type: string }) => [d.event_type, d]));
    const ok = byType.get('shop.paid') as Record<string, unknown>;
    expect(ok).toMatchObject({
      status: 'delivered',
      attempts: 1,
      next_attempt_at: null,
      last_error: null,
      replay_id: null,
      response_status: 200,
    });
    expect(ok['delivery_id']).toMatch(/^dlv_/);
    expect(ok['latency_ms']).toBeGreaterThanOrEqual(0);
    expect(ok['last_attempt_at']).toMatch(ISO);
    // The delivery id is the one the receiver was sent.
    const sent = receiver.at('/shop').find((r) => r.json.event_id === ok['event_id']);
    expect(sent?.headers['x-platform-delivery-id']).toBe(ok['delivery_id']);
    const failed = byType.get('shop.refused') as Record<string, unknown>;
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: 2,
      response_status: 500,
      next_attempt_at: null,
    });
    expect(failed['last_error']).toMatch(/WEBHOOK_DELIVERY_FAILED/);

    const onlyFailed = (await deliveries(sub.id, '?status=failed')).data.data;
    expect(onlyFailed.deliveries.map((d: { event_type: string }) => d.event_type)).toEqual(['shop.refused']);
    expect(onlyFailed.pagination.total).toBe(1);
    const delivered = (await deliveries(sub.id, '?status=delivered')).data.data;
    expect(delivered.deliveries).toHaveLength(3);
    expect((await deliveries(sub.id, '?status=pending')).data.data.deliveries).toEqual([]);

    const first = (await deliveries(sub.id, '?per_page=3')).data.data;
    expect(first.pagination).toEqual({
      page: 1,
      per_page: 3,
      total: 4,
      pages: 2,
      has_next: true,
      has_prev: false,
    });
    const second = (await deliveries(sub.id, '?per_page=3&page=2')).data.data;
    expect(second.pagination).toMatchObject({ page: 2, has_next: false, has_prev: true });
    expect([...first.deliveries, ...second.deliveries].map((d: { event_id: string }) => d.event_id)).toEqual(
      list.map((d: { event_id: string }) => d.event_id),
    );

    // An admin sees them too.
    const asAdmin = await deliveries(sub.id, '', admin);
    expect(asAdmin.statusCode).toBe(200);
    expect(asAdmin.data.data.pagination.total).toBe(4);
  });

  it('shows a delivery waiting for its retry as pending, with when it is due', async () => {
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['slow.*'],
      // 3600 s at FAST_WEBHOOKS' scale of 0.001: the retry waits about 3.6 s.
      webhook_config: {
        url: `${receiver.url}/slow`,
        retry_policy: { max_attempts: 5, retry_delay_seconds: 3600, exponential_backoff: false },
      },
    });
    await emit(t, ann.access, { event_type: 'slow.one', data: { refuse: true } });
    await until(() => receiver.at('/slow').length === 1, 'the first attempt');
    let pending: Record<string, unknown> | undefined;
    await until(async () => {
      const res = await deliveries(sub.id, '?status=pending');
      pending = res.data.data.deliveries[0];
      return pending?.['attempts'] === 1;
    }, 'the delivery back in pending');
    expect(pending).toMatchObject({ status: 'pending', attempts: 1, response_status: 503 });
    expect(pending?.['next_attempt_at']).toMatch(ISO);
    expect(Date.parse(String(pending?.['next_attempt_at']))).toBeGreaterThan(
      Date.parse(String(pending?.['last_attempt_at'])),
    );
    await t.request('DELETE', `/api/v1/events/subscriptions/${sub.id}`, { token: ann.access });
  });

  it('lists every attempt of one delivery, oldest first, to its owner and admins only', async () => {
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['tries.*'],
      webhook_config: {
        url: `${receiver.url}/tries`,
        retry_policy: { max_attempts: 3, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    await emit(t, ann.access, { event_type: 'tries.refused', data: { refuse: true } });
    await until(
      async () => (await deliveries(sub.id)).data.data.deliveries[0]?.status === 'failed',
      'failed',
    );
    const [delivery] = (await deliveries(sub.id)).data.data.deliveries;
    const url = `/api/v1/events/subscriptions/${sub.id}/deliveries/${delivery.delivery_id}/attempts`;
    const res = await t.request('GET', url, { token: ann.access });
    expect(res.statusCode, res.body).toBe(200);
    const attempts = res.data.data.attempts as Record<string, unknown>[];
    // The receiver was called three times, and each call is an attempt.
    expect(receiver.at('/tries')).toHaveLength(3);
    expect(attempts.map((a) => a['attempt'])).toEqual([1, 2, 3]);
    for (const a of attempts) {
      expect(a).toMatchObject({ status: 'failed', response_status: 500 });
      expect(a['error']).toMatch(/HTTP 500/);
      expect(a['attempted_at']).toMatch(ISO);
      expect(a['latency_ms']).toBeGreaterThanOrEqual(0);
    }
    // A retry followed the first two; none after the last.
    expect(attempts.map((a) => a['next_attempt_at'] !== null)).toEqual([true, true, false]);
    expect(attempts[2]!['attempted_at']).toBe(delivery.last_attempt_at);
    expect((await t.request('GET', url, { token: admin })).data.data.attempts).toHaveLength(3);
    const asBob = await t.request('GET', url, { token: bob.access });
    expect(asBob.statusCode).toBe(404);
    expect(asBob.data.error.code).toBe('SUBSCRIPTION_NOT_FOUND');
    // Another subscription's delivery id is not one of this one's.
    const other = await createSubscription(t, ann.access, {
      event_patterns: ['elsewhere.*'],
      webhook_config: { url: `${receiver.url}/elsewhere` },
    });
    const wrong = await t.request(
      'GET',
      `/api/v1/events/subscriptions/${other.id}/deliveries/${delivery.delivery_id}/attempts`,
      { token: ann.access },
    );
    expect(wrong.statusCode).toBe(404);
    expect(wrong.data.error.code).toBe('DELIVERY_NOT_FOUND');
  });

  it("answers 404 SUBSCRIPTION_NOT_FOUND for another user's subscription and for an unknown one", async () => {
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['private.*'],
      webhook_config: { url: `${receiver.url}/private` },
    });
    for (const [id, token] of [
      [sub.id, bob.access],
      ['sub_00000000000000000000000000', ann.access],
    ] as const) {
      const res = await deliveries(id, '', token);
      expect(res.statusCode).toBe(404);
      expect(res.data.error.code).toBe('SUBSCRIPTION_NOT_FOUND');
    }
  });

  it('refuses an unknown status and a page size over 100 with 422', async () => {
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['bounds.*'],
      webhook_config: { url: `${receiver.url}/bounds` },
    });
    for (const query of ['?status=sent', '?per_page=101', '?page=0', '?colour=red']) {
      const res = await deliveries(sub.id, query);
      expect(res.statusCode, query).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
    }
  });
});
