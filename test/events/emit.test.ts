import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('emitting events', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let user: { id: string; access: string };
  beforeAll(async () => {
    t = await startPlatform({ events: { max_payload_bytes: 2048 } });
    admin = await t.adminToken();
    user = await t.createUser('emitter', ['user']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('stores an event and answers 201 with its summary after the commit', async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'order.created', source: 'shop', data: { order_id: 42 }, priority: 7 },
      headers: { 'user-agent': 'emit-test' },
    });
    expect(res.statusCode).toBe(201);
    const event = res.data.data.event;
    expect(event).toMatchObject({
      event_type: 'order.created',
      source: 'shop',
      priority: 7,
      status: 'emitted',
      subscriber_count: 0,
    });
    expect(event.event_id).toMatch(/^evt_/);
    const detail = await t.request('GET', `/api/v1/events/${event.event_id}`, { token: user.access });
    expect(detail.statusCode).toBe(200);
    expect(detail.data.data.event).toMatchObject({
      event_id: event.event_id,
      data: { order_id: 42 },
      status: 'processed',
      security_level: 'internal',
      metadata: { user_agent: 'emit-test', request_id: res.data.request_id },
      delivery_info: { total_subscribers: 0, successful_deliveries: 0, failed_deliveries: 0 },
    });
    expect(detail.data.data.event.metadata.correlation_id).toBe(res.data.request_id);
    expect(detail.data.data.event.metadata.processing_time_ms).toBeGreaterThan(0);
    expect(detail.data.data.event.sequence).toBeGreaterThan(0);
  });

  it('accepts the short form with type instead of event_type and fills the defaults', async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { type: 'user.registered', data: { plan: 'free' }, metadata: { correlation_id: 'corr-1' } },
    });
    expect(res.statusCode).toBe(201);
    expect(res.data.data.event).toMatchObject({ event_type: 'user.registered', source: 'api', priority: 5 });
    const detail = await t.request('GET', `/api/v1/events/${res.data.data.event.event_id}`, {
      token: user.access,
    });
    expect(detail.data.data.event.metadata.correlation_id).toBe('corr-1');
  });

  it.each([
    ['an empty segment', 'user..login'],
    ['a space', 'user login'],
    ['a wildcard', 'user.*'],
    ['eleven segments', 'a.b.c.d.e.f.g.h.i.j.k'],
    ['256 characters', 'a'.repeat(256)],
  ])('refuses a type with %s with 400 INVALID_EVENT_TYPE', async (_name, type) => {
    const res = await t.request('POST', '/api/v1/events', { token: user.access, body: { event_type: type } });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.code).toBe('INVALID_EVENT_TYPE');
  });

  it('refuses a request without a type, with 422 VALIDATION_ERROR', async () => {
    const res = await t.request('POST', '/api/v1/events', { token: user.access, body: { data: {} } });
    expect(res.statusCode).toBe(422);
    expect(res.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'event_type' } });
  });

  it('refuses data over events.max_payload_bytes with 413 EVENT_TOO_LARGE', async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'big.one', data: { blob: 'x'.repeat(3000) } },
    });
    expect(res.statusCode).toBe(413);
    expect(res.data.error).toMatchObject({ code: 'EVENT_TOO_LARGE', details: { max_bytes: 2048 } });
  });

  it('refuses expires_at in the past with 410 EVENT_EXPIRED', async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'late.event', expires_at: '2020-01-01T00:00:00Z' },
    });
    expect(res.statusCode).toBe(410);
    expect(res.data.error.code).toBe('EVENT_EXPIRED');
  });

  it('answers 410 EVENT_EXPIRED for an event read after its expiry', async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'short.lived', expires_at: new Date(Date.now() + 300).toISOString() },
    });
    expect(res.statusCode).toBe(201);
    await new Promise((r) => setTimeout(r, 400));
    const detail = await t.request('GET', `/api/v1/events/${res.data.data.event.event_id}`, {
      token: user.access,
    });
    expect(detail.statusCode).toBe(410);
    expect(detail.data.error.code).toBe('EVENT_EXPIRED');
  });

  it.each([
    [0, 422],
    [11, 422],
    [1.5, 422],
  ])('refuses priority %s with %s', async (priority, status) => {
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'p.check', priority },
    });
    expect(res.statusCode).toBe(status);
    expect(res.data.error.code).toBe('VALIDATION_ERROR');
  });

  it('refuses an unknown security_level and unknown fields with 422', async () => {
    for (const body of [
      { event_type: 'a.b', security_level: 'secret' },
      { event_type: 'a.b', colour: 'red' },
    ]) {
      const res = await t.request('POST', '/api/v1/events', { token: user.access, body });
      expect(res.statusCode).toBe(422);
    }
  });

  it('answers 404 EVENT_NOT_FOUND for an unknown event', async () => {
    const res = await t.request('GET', '/api/v1/events/evt_nope', { token: user.access });
    expect(res.statusCode).toBe(404);
    expect(res.data.error.code).toBe('EVENT_NOT_FOUND');
  });

  it('keeps confidential data encrypted at rest and shows it only to admins and the emitter', async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: {
        event_type: 'payment.processed',
        security_level: 'confidential',
        data: { card: '4111-secret' },
      },
    });
    expect(res.statusCode).toBe(201);
    const id = res.data.data.event.event_id;
    const stored = await t.platform.context.database.db
      .selectFrom('events')
      .select(['data', 'data_encrypted'])
      .where('event_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(stored.data_encrypted).toBe(1);
    expect(stored.data).not.toContain('4111-secret');
    const mine = await t.request('GET', `/api/v1/events/${id}`, { token: user.access });
    expect(mine.data.data.event.data).toEqual({ card: '4111-secret' });
    const asAdmin = await t.request('GET', `/api/v1/events/${id}`, { token: admin });
    expect(asAdmin.data.data.event.data).toEqual({ card: '4111-secret' });
    const other = await t.createUser('onlooker', ['user']);
    const theirs = await t.request('GET', `/api/v1/events/${id}`, { token: other.access });
    expect(theirs.statusCode).toBe(404);
    const list = await t.request('GET', '/api/v1/events?event_type=payment.processed', {
      token: other.access,
    });
    expect(list.data.data.events).toHaveLength(0);
    const ownList = await t.request('GET', '/api/v1/events?event_type=payment.processed', {
      token: user.access,
    });
    expect(ownList.data.data.events).toHaveLength(1);
    expect(ownList.data.data.events[0].data_preview).toBeUndefined();
  });

  it('stores the client-encrypted form as it is', async () => {
    const data = { encrypted: true, encryption_method: 'AES-256-GCM', encrypted_payload: 'b64payload==' };
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'vault.item.saved', data },
    });
    const detail = await t.request('GET', `/api/v1/events/${res.data.data.event.event_id}`, {
      token: user.access,
    });
    expect(detail.data.data.event.data).toEqual(data);
  });

  it('needs events:emit: an API key without it gets 403 INSUFFICIENT_EVENT_PERMISSIONS', async () => {
    const key = await t.request('POST', '/api/v1/auth/api-keys', {
      token: user.access,
      body: { name: 'reader', scopes: ['events:subscribe'] },
    });
    expect(key.statusCode).toBe(201);
    const res = await t.request('POST', '/api/v1/events', {
      apiKey: key.data.data.key,
      body: { event_type: 'a.b' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.data.error.code).toBe('INSUFFICIENT_EVENT_PERMISSIONS');
  });
});
