import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** Edges of the event and subscription API found by probing it from outside. */
describe('event API edges', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let user: { id: string; access: string };
  const json = { 'content-type': 'application/json' };
  /** JSON nesting `depth` arrays, as text: an object that deep cannot even be stringified to send it. */
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  beforeAll(async () => {
    t = await startPlatform();
    user = await t.createUser('edges', ['user']);
  });
  afterAll(async () => {
    await t.close();
  });

  const emit = (body: unknown) => t.request('POST', '/api/v1/events', { token: user.access, body });

  describe('metadata.correlation_id', () => {
    it('refuses one longer than 255 characters with 422 naming the field, instead of failing the write', async () => {
      // Random, so PostgreSQL cannot compress it under its index entry limit.
      const long = Array.from({ length: 5000 }, () => Math.random().toString(36).slice(2, 3)).join('');
      const res = await emit({ event_type: 'edge.corr', metadata: { correlation_id: long } });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.data.error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: { field: 'metadata.correlation_id' },
      });
      const ok = await emit({ event_type: 'edge.corr', metadata: { correlation_id: 'c'.repeat(255) } });
      expect(ok.statusCode).toBe(201);
    });

    it('keeps a numeric correlation id as its text, so the list finds the event by it', async () => {
      const res = await emit({ event_type: 'edge.corr', metadata: { correlation_id: 4711 } });
      expect(res.statusCode).toBe(201);
      const list = await t.request('GET', '/api/v1/events?correlation_id=4711', { token: user.access });
      expect(list.data.data.events.map((e: { event_id: string }) => e.event_id)).toEqual([
        res.data.data.event.event_id,
      ]);
      expect(list.data.data.events[0].metadata.correlation_id).toBe('4711');
    });

    it('refuses a correlation id that is an object', async () => {
      const res = await emit({ event_type: 'edge.corr', metadata: { correlation_id: { id: 1 } } });
      expect(res.statusCode).toBe(422);
      expect(res.data.error.details.field).toBe('metadata.correlation_id');
    });
  });

  // Nested past the 100 levels event fields allow, within the 128 any request body may have (a body nested
  // thousands deep is refused whole, before any route: test/http/deep-bodies.test.ts).
  describe('deeply nested bodies', () => {
    it.each([
      ['data', `{"event_type":"edge.deep","data":{"x":${nested(110)}}}`],
      ['metadata', `{"event_type":"edge.deep","metadata":{"x":${nested(110)}}}`],
    ])('refuses %s nested past 100 levels with 422 naming it', async (field, body) => {
      const res = await t.request('POST', '/api/v1/events', { token: user.access, body, headers: json });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field } });
    });

    it('accepts data nested 50 levels deep and gives it back', async () => {
      let data: Record<string, unknown> = { leaf: true };
      for (let i = 0; i < 49; i++) data = { n: data };
      const res = await emit({ event_type: 'edge.deep', data });
      expect(res.statusCode).toBe(201);
      const detail = await t.request('GET', `/api/v1/events/${res.data.data.event.event_id}`, {
        token: user.access,
      });
      expect(detail.data.data.event.data).toEqual(data);
    });

    it('refuses data_filters nested past 100 levels on create and on update, with 422', async () => {
      const url = '"webhook_config":{"url":"https://hooks.example.test/deep"}';
      const filters = `"filters":{"data_filters":{"x":${nested(110)}}}`;
      const created = await t.request('POST', '/api/v1/events/subscriptions', {
        token: user.access,
        headers: json,
        body: `{"event_patterns":["edge.*"],${url},${filters}}`,
      });
      expect(created.statusCode, created.body).toBe(422);
      expect(created.data.error.details.field).toBe('filters.data_filters');

      const sub = await t.request('POST', '/api/v1/events/subscriptions', {
        token: user.access,
        body: { event_patterns: ['edge.*'], webhook_config: { url: 'https://hooks.example.test/deep' } },
      });
      expect(sub.statusCode).toBe(201);
      const id = sub.data.data.subscription.subscription_id;
      const updated = await t.request('PATCH', `/api/v1/events/subscriptions/${id}`, {
        token: user.access,
        headers: json,
        body: `{${filters}}`,
      });
      expect(updated.statusCode, updated.body).toBe(422);
      expect(updated.data.error.details.field).toBe('filters.data_filters');
      const read = await t.request('GET', `/api/v1/events/subscriptions/${id}`, { token: user.access });
      expect(read.data.data.subscription.filters).toEqual({});
    });
  });

  it('cuts a long string of data_preview between characters, never inside an emoji', async () => {
    const res = await emit({ event_type: 'edge.preview', data: { s: `${'a'.repeat(119)}😀😀😀` } });
    expect(res.statusCode).toBe(201);
    const list = await t.request('GET', '/api/v1/events?event_type=edge.preview', { token: user.access });
    expect(list.data.data.events[0].data_preview.s).toBe(`${'a'.repeat(119)}…`);
    expect(list.body).not.toMatch(/\\ud83d(?!\\ude00)/i);
  });

  it('refuses a delivery_method other than webhook naming the value that would do', async () => {
    const res = await t.request('POST', '/api/v1/events/subscriptions', {
      token: user.access,
      body: {
        event_patterns: ['edge.*'],
        delivery_method: 'email',
        webhook_config: { url: 'https://hooks.example.test/m' },
      },
    });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details.errors).toEqual([
      { field: 'delivery_method', reason: 'must be one of: webhook' },
    ]);
  });

  it('names the field the caller used when the short form carries a bad type', async () => {
    const res = await emit({ type: 'bad..type', data: {} });
    expect(res.statusCode).toBe(400);
    expect(res.data.error).toMatchObject({ code: 'INVALID_EVENT_TYPE', details: { field: 'type' } });
  });
});
