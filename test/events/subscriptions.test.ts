import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('subscriptions and webhooks', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let ann: { id: string; access: string };
  let bob: { id: string; access: string };
  const hook = { url: 'https://hooks.example.test/in' };

  beforeAll(async () => {
    t = await startPlatform({ events: { max_subscriptions_per_user: 3 } });
    admin = await t.adminToken();
    ann = await t.createUser('ann', ['user']);
    bob = await t.createUser('bob', ['user']);
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (token: string, body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/events/subscriptions', { token, body });
  const remove = async (id: string, token: string) => {
    const res = await t.request('DELETE', `/api/v1/events/subscriptions/${id}`, { token });
    expect(res.statusCode, JSON.stringify(res.data)).toBe(200);
  };
  const outboxFor = async (eventId: string) =>
    t.platform.context.database.db
      .selectFrom('event_outbox')
      .selectAll()
      .where('event_id', '=', eventId)
      .execute();
  const emit = async (token: string, body: Record<string, unknown>) => {
    const res = await t.request('POST', '/api/v1/events', { token, body });
    expect(res.statusCode).toBe(201);
    return res.data.data.event;
  };

  it('creates an active subscription with defaults and shows the secret once', async () => {
    const res = await create(ann.access, {
      name: 'orders',
      event_patterns: ['order.*'],
      webhook_config: hook,
    });
    expect(res.statusCode).toBe(201);
    const sub = res.data.data.subscription;
    expect(sub).toMatchObject({
      name: 'orders',
      status: 'active',
      enabled: true,
      event_patterns: ['order.*'],
      delivery_method: 'webhook',
      webhook_url: hook.url,
      events_delivered: 0,
      last_delivery: null,
      success_rate: 1,
      webhook_config: {
        url: hook.url,
        retry_policy: { max_attempts: 5, retry_delay_seconds: 30, exponential_backoff: true },
        timeout_seconds: 10,
      },
      batch_config: { enabled: false },
    });
    expect(sub.subscription_id).toMatch(/^sub_/);
    expect(sub.webhook_config.secret.length).toBeGreaterThanOrEqual(16);
    expect(sub.webhook_config.secret).not.toBe('********');
    const again = await t.request('GET', `/api/v1/events/subscriptions/${sub.subscription_id}`, {
      token: ann.access,
    });
    expect(again.data.data.subscription.webhook_config.secret).toBe('********');
    const stored = await t.platform.context.database.db
      .selectFrom('subscriptions')
      .select('webhook_secret')
      .where('id', '=', sub.subscription_id)
      .executeTakeFirstOrThrow();
    expect(stored.webhook_secret).not.toContain(sub.webhook_config.secret);
    await remove(sub.subscription_id, ann.access);
  });

  it('queues one outbox row per matching active subscription in the emitting transaction', async () => {
    const a = (
      await create(ann.access, {
        event_patterns: ['invoice.*'],
        filters: {
          source: ['billing'],
          priority: { min: 3, max: 8 },
          data_filters: { 'customer.tier': ['gold'] },
        },
        webhook_config: hook,
      })
    ).data.data.subscription;
    const b = (await create(bob.access, { event_patterns: ['invoice.**'], webhook_config: hook })).data.data
      .subscription;
    const matching = await emit(ann.access, {
      event_type: 'invoice.paid',
      source: 'billing',
      priority: 5,
      data: { customer: { tier: 'gold' } },
    });
    expect(matching.subscriber_count).toBe(2);
    const rows = await outboxFor(matching.event_id);
    expect(rows.map((r) => r.subscription_id).sort()).toEqual([a.subscription_id, b.subscription_id].sort());
    // The webhook dispatcher may have claimed or already tried a row (the targets do not resolve).
    expect(rows[0]).toMatchObject({ priority: 5 });
    expect(['pending', 'delivering']).toContain(rows[0]!.status);
    for (const [body, expected] of [
      [{ source: 'shop', priority: 5, data: { customer: { tier: 'gold' } } }, [b.subscription_id]],
      [{ source: 'billing', priority: 9, data: { customer: { tier: 'gold' } } }, [b.subscription_id]],
      [{ source: 'billing', priority: 5, data: { customer: { tier: 'silver' } } }, [b.subscription_id]],
    ] as const) {
      const e = await emit(ann.access, { event_type: 'invoice.paid', ...body });
      expect((await outboxFor(e.event_id)).map((r) => r.subscription_id)).toEqual(expected);
    }
    const detail = await t.request('GET', `/api/v1/events/${matching.event_id}`, { token: admin });
    expect(['emitted', 'processing']).toContain(detail.data.data.event.status);
    expect(detail.data.data.event.delivery_info).toMatchObject({
      total_subscribers: 2,
      pending_deliveries: 2,
    });
    // A user who is not an admin is told only about their own subscriptions' deliveries.
    const own = await t.request('GET', `/api/v1/events/${matching.event_id}`, { token: ann.access });
    expect(own.data.data.event.delivery_info).toMatchObject({ total_subscribers: 1, pending_deliveries: 1 });
    for (const [s, token] of [
      [a, ann.access],
      [b, bob.access],
    ] as const) {
      await remove(s.subscription_id, token);
    }
  });

  it('does not queue events for a paused subscription, and queues again once enabled', async () => {
    const sub = (await create(ann.access, { event_patterns: ['ship.*'], webhook_config: hook })).data.data
      .subscription;
    const paused = await t.request('PATCH', `/api/v1/events/subscriptions/${sub.subscription_id}`, {
      token: ann.access,
      body: { enabled: false },
    });
    expect(paused.statusCode).toBe(200);
    expect(paused.data.data.subscription).toMatchObject({ status: 'paused', enabled: false });
    const quiet = await emit(ann.access, { event_type: 'ship.sent' });
    expect(await outboxFor(quiet.event_id)).toHaveLength(0);
    const resumed = await t.request('PUT', `/api/v1/events/subscriptions/${sub.subscription_id}`, {
      token: ann.access,
      body: { enabled: true, name: 'shipping', webhook_config: { url: 'http://other.example.test/hook' } },
    });
    expect(resumed.data.data.subscription).toMatchObject({
      status: 'active',
      name: 'shipping',
      webhook_url: 'http://other.example.test/hook',
      event_patterns: ['ship.*'],
      webhook_config: { retry_policy: { max_attempts: 5 } },
    });
    const loud = await emit(ann.access, { event_type: 'ship.sent' });
    expect(await outboxFor(loud.event_id)).toHaveLength(1);
    await remove(sub.subscription_id, ann.access);
  });

  it('brings a subscription in error back to active with enabled: true', async () => {
    const sub = (await create(ann.access, { event_patterns: ['err.*'], webhook_config: hook })).data.data
      .subscription;
    await t.platform.context.database.db
      .updateTable('subscriptions')
      .set({ status: 'error', consecutive_failures: 10 })
      .where('id', '=', sub.subscription_id)
      .execute();
    const listed = await t.request('GET', '/api/v1/events/subscriptions?status=error', { token: ann.access });
    expect(listed.data.data.subscriptions.map((s: any) => s.subscription_id)).toEqual([sub.subscription_id]);
    const res = await t.request('PATCH', `/api/v1/events/subscriptions/${sub.subscription_id}`, {
      token: ann.access,
      body: { enabled: true },
    });
    expect(res.data.data.subscription.status).toBe('active');
    await remove(sub.subscription_id, ann.access);
  });

  it('hides subscriptions from other users with 404 SUBSCRIPTION_NOT_FOUND; admins see all', async () => {
    const sub = (await create(ann.access, { event_patterns: ['x.*'], webhook_config: hook })).data.data
      .subscription;
    const path = `/api/v1/events/subscriptions/${sub.subscription_id}`;
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'mine now' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await t.request(method, path, { token: bob.access, ...(body ? { body } : {}) });
      expect(res.statusCode).toBe(404);
      expect(res.data.error.code).toBe('SUBSCRIPTION_NOT_FOUND');
    }
    const bobs = await t.request('GET', '/api/v1/events/subscriptions', { token: bob.access });
    expect(bobs.data.data.subscriptions).toHaveLength(0);
    const all = await t.request('GET', '/api/v1/events/subscriptions', { token: admin });
    expect(all.data.data.subscriptions.map((s: any) => s.subscription_id)).toContain(sub.subscription_id);
    const deleted = await t.request('DELETE', path, { token: admin });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.data).toMatchObject({ success: true, message: 'Subscription deleted' });
    expect((await t.request('GET', path, { token: ann.access })).statusCode).toBe(404);
  });

  it('filters the list by status, delivery method and pattern', async () => {
    const one = (await create(ann.access, { event_patterns: ['f.one'], webhook_config: hook })).data.data
      .subscription;
    const two = (
      await create(ann.access, { event_patterns: ['f.two'], enabled: false, webhook_config: hook })
    ).data.data.subscription;
    const get = async (q: string) =>
      (
        await t.request('GET', `/api/v1/events/subscriptions${q}`, { token: ann.access })
      ).data.data.subscriptions.map((s: any) => s.subscription_id);
    expect(await get('?status=paused')).toEqual([two.subscription_id]);
    expect(await get('?event_pattern=f.one')).toEqual([one.subscription_id]);
    expect((await get('?delivery_method=webhook')).sort()).toEqual(
      [one.subscription_id, two.subscription_id].sort(),
    );
    expect(await get('?delivery_method=plugin')).toEqual([]);
    for (const s of [one, two]) {
      await remove(s.subscription_id, ann.access);
    }
  });

  it('refuses bad patterns, non-http URLs, and timeouts over 60 s with 422', async () => {
    for (const body of [
      { event_patterns: ['user..x'], webhook_config: hook },
      { event_patterns: ['user.*'], webhook_config: { url: 'ftp://example.test/x' } },
      { event_patterns: ['user.*'], webhook_config: { url: 'not a url' } },
      { event_patterns: ['user.*'], webhook_config: { ...hook, timeout_seconds: 61 } },
      { event_patterns: [], webhook_config: hook },
      { event_patterns: ['user.*'] },
      { event_patterns: ['user.*'], webhook_config: hook, delivery_method: 'carrier-pigeon' },
    ]) {
      const res = await create(ann.access, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
    }
    const emptyRange = await create(ann.access, {
      event_patterns: ['user.*'],
      webhook_config: hook,
      filters: { priority: { min: 8, max: 2 } },
    });
    expect(emptyRange.statusCode).toBe(422);
    expect(emptyRange.data.error.details).toMatchObject({ field: 'filters.priority.min' });
  });

  it('limits subscriptions per user with 429 SUBSCRIPTION_LIMIT_EXCEEDED', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await create(bob.access, { event_patterns: [`limit.${i}`], webhook_config: hook });
      expect(res.statusCode).toBe(201);
      made.push(res.data.data.subscription.subscription_id);
    }
    const over = await create(bob.access, { event_patterns: ['limit.x'], webhook_config: hook });
    expect(over.statusCode).toBe(429);
    expect(over.data.error.code).toBe('SUBSCRIPTION_LIMIT_EXCEEDED');
    for (const id of made) {
      await remove(id, bob.access);
    }
    // Sent at once, the limit still holds: exactly three are made.
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        create(bob.access, { event_patterns: [`burst.${i}`], webhook_config: hook }),
      ),
    );
    expect(burst.map((r) => r.statusCode).sort()).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    for (const res of burst.filter((r) => r.statusCode === 201)) {
      await remove(res.data.data.subscription.subscription_id, bob.access);
    }
  });

  it('manages webhooks through /api/v1/webhooks', async () => {
    const created = await t.request('POST', '/api/v1/webhooks', {
      token: ann.access,
      body: { url: 'https://receiver.example.test/h', events: ['order.created'], secret: 'my-own-secret-1' },
    });
    expect(created.statusCode).toBe(201);
    const webhook = created.data.data.webhook;
    expect(webhook).toMatchObject({
      url: 'https://receiver.example.test/h',
      events: ['order.created'],
      secret: 'my-own-secret-1',
      status: 'active',
    });
    const listed = await t.request('GET', '/api/v1/webhooks', { token: ann.access });
    expect(listed.data.data.webhooks).toEqual([{ ...webhook, secret: '********' }]);
    const e = await emit(bob.access, { event_type: 'order.created' });
    expect(e.subscriber_count).toBe(1);
    expect(
      (await t.request('DELETE', `/api/v1/webhooks/${webhook.id}`, { token: bob.access })).statusCode,
    ).toBe(404);
    expect(
      (await t.request('DELETE', `/api/v1/webhooks/${webhook.id}`, { token: ann.access })).statusCode,
    ).toBe(200);
    expect((await t.request('GET', '/api/v1/webhooks', { token: ann.access })).data.data.webhooks).toEqual(
      [],
    );
  });

  it('names the fields of /api/v1/webhooks in its refusals', async () => {
    const refused = (body: Record<string, unknown>) =>
      t.request('POST', '/api/v1/webhooks', { token: ann.access, body });
    const badUrl = await refused({ url: 'javascript:alert(1)', events: ['order.created'] });
    expect(badUrl.statusCode).toBe(422);
    expect(badUrl.data.error.details.field).toBe('url');
    expect(badUrl.body).not.toContain('webhook_config');
    const badPattern = await refused({
      url: 'https://receiver.example.test/h',
      events: ['order.created', 'a..b'],
    });
    expect(badPattern.statusCode).toBe(422);
    expect(badPattern.data.error.details.field).toMatch(/^events/);
    expect(badPattern.body).not.toContain('event_patterns');
  });
});
