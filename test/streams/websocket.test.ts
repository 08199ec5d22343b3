import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { until, WsClient } from './stream-clients.js';

describe('WebSocket streams', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let wsBase: string;
  let token: string;
  const clients: WsClient[] = [];

  const emit = async (type: string, extra: Record<string, unknown> = {}) => {
    const res = await t.request('POST', '/api/v1/events', { token, body: { event_type: type, ...extra } });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };
  const connect = async (
    path = `/api/v1/events/stream?token=${token}`,
    headers: Record<string, string> = {},
  ) => {
    const c = new WsClient(`${wsBase}${path}`, headers);
    clients.push(c);
    await c.opened;
    return c;
  };

  beforeAll(async () => {
    t = await startPlatform();
    wsBase = (await t.platform.listen()).replace(/^http/, 'ws');
    token = (await t.createUser('socket', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await t.close();
  });

  it('subscribes by message and receives matching events, filtered by priority', async () => {
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['ws.*'], filters: { priority: { min: 5 } } });
    await until(() => c.of('subscribed').length === 1);
    expect(c.of('subscribed')[0]).toMatchObject({ patterns: ['ws.*'], filters: { priority: { min: 5 } } });
    const id = await emit('ws.hello', { priority: 6, data: { hi: true } });
    await emit('ws.low', { priority: 2 });
    await emit('other.x', { priority: 9 });
    await until(() => c.of('event').length === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.of('event')).toHaveLength(1);
    expect(c.of('event')[0].event).toMatchObject({
      event_id: id,
      event_type: 'ws.hello',
      source: 'api',
      data: { hi: true },
    });
    expect(typeof c.of('event')[0].event.timestamp).toBe('string');
  });

  it('like SSE, receives every event it may read when it opens without patterns and sends none, from the moment it opened', async () => {
    const c = await connect();
    // Within the first second it may still say what it wants; an event of that second is not missed.
    const early = await emit('dflt.first.deep');
    await until(() => c.messages.some((m) => m.message_type === 'subscribed'), 5000, 'the default');
    expect(c.messages[0]).toMatchObject({ message_type: 'subscribed', patterns: ['*'], implicit: true });
    const later = await emit('dflt.second');
    await until(() => c.of('event').some((m) => m.event.event_id === later));
    expect(c.of('event').map((m) => m.event.event_id)).toEqual([early, later]);
    // Its first subscribe replaces the default.
    c.send({ action: 'subscribe', patterns: ['dflt.only'] });
    await until(() => c.of('subscribed').length === 1);
    expect(c.of('subscribed')[0]).toMatchObject({ patterns: ['dflt.only'] });
    expect(c.of('subscribed')[0].implicit).toBeUndefined();
    await emit('dflt.other');
    const kept = await emit('dflt.only');
    await until(() => c.of('event').some((m) => m.event.event_id === kept));
    await new Promise((r) => setTimeout(r, 100));
    expect(c.of('event').map((m) => m.event.event_type)).toEqual([
      'dflt.first.deep',
      'dflt.second',
      'dflt.only',
    ]);
  });

  it('gets no default when its subscribe comes first: only what it asked for, even right after opening', async () => {
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['dfln.mine'] });
    await emit('dfln.other');
    await until(() => c.of('subscribed').length === 1);
    const mine = await emit('dfln.mine');
    await new Promise((r) => setTimeout(r, 1300));
    expect(c.messages.filter((m) => m.message_type === 'subscribed')).toHaveLength(1);
    expect(c.of('event').map((m) => m.event.event_id)).toEqual([mine]);
  });

  it('answers ping with pong and bad messages with an error, keeping the socket open', async () => {
    const c = await connect();
    c.send({ action: 'ping' });
    await until(() => c.of('pong').length === 1);
    c.send('{not json');
    c.send({ action: 'dance' });
    c.send({ action: 'subscribe', patterns: ['bad..pattern'] });
    await until(() => c.of('error').length === 3);
    expect(c.of('error').map((m) => m.error.code)).toEqual([
      'VALIDATION_ERROR',
      'VALIDATION_ERROR',
      'VALIDATION_ERROR',
    ]);
    c.send({ action: 'ping' });
    await until(() => c.of('pong').length === 2);
    expect(c.socket.readyState).toBe(c.socket.OPEN);
  });

  it('holds at most 100 patterns in all, however many subscribe messages add them', async () => {
    const c = await connect();
    const batch = (n: number) => Array.from({ length: 60 }, (_, i) => `many.p${n}x${i}`);
    c.send({ action: 'subscribe', patterns: batch(1) });
    await until(() => c.of('subscribed').length === 1);
    c.send({ action: 'subscribe', patterns: batch(2) });
    await until(() => c.of('error').length === 1);
    expect(c.of('error')[0].error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { field: 'patterns', reason: 'too many patterns' },
    });
    // The refused message changed nothing: the first 60 patterns still select.
    c.send({ action: 'subscribe', patterns: ['many.p1x0'] });
    await until(() => c.of('subscribed').length === 2);
    expect(c.of('subscribed')[1].patterns).toHaveLength(60);
  });

  it('stops delivering after unsubscribe', async () => {
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['unsub.*', 'keep.*'] });
    await until(() => c.of('subscribed').length === 1);
    c.send({ action: 'unsubscribe', patterns: ['unsub.*'] });
    await until(() => c.of('unsubscribed').length === 1);
    expect(c.of('unsubscribed')[0].patterns).toEqual(['keep.*']);
    await emit('unsub.gone');
    const kept = await emit('keep.this');
    await until(() => c.of('event').length === 1);
    expect(c.of('event')[0].event.event_id).toBe(kept);
    c.send({ action: 'unsubscribe' });
    await until(() => c.of('unsubscribed').length === 2);
    await emit('keep.this');
    await new Promise((r) => setTimeout(r, 100));
    expect(c.of('event')).toHaveLength(1);
  });

  it('answers unsubscribe with exactly the patterns it removed', async () => {
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['rm.a', 'rm.b', 'rm.c'] });
    await until(() => c.of('subscribed').length === 1);
    c.send({ action: 'unsubscribe', patterns: ['rm.a', 'rm.never'] });
    await until(() => c.of('unsubscribed').length === 1);
    expect(c.of('unsubscribed')[0]).toMatchObject({ patterns: ['rm.b', 'rm.c'], removed: ['rm.a'] });
    c.send({ action: 'unsubscribe' });
    await until(() => c.of('unsubscribed').length === 2);
    expect(c.of('unsubscribed')[1]).toMatchObject({ patterns: [], removed: ['rm.b', 'rm.c'] });
    c.send({ action: 'unsubscribe', patterns: ['rm.b'] });
    await until(() => c.of('unsubscribed').length === 3);
    expect(c.of('unsubscribed')[2]).toMatchObject({ patterns: [], removed: [] });
  });

  it('refuses unknown filters and an inverted priority range with an error message, keeping the socket', async () => {
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['flt.*'], filters: { source: ['s1'] } });
    await until(() => c.of('subscribed').length === 1);
    c.send({ action: 'subscribe', patterns: ['flt.*'], filters: { bogus: 1 } });
    c.send({ action: 'subscribe', patterns: ['flt.*'], filters: { data_filters: { a: 1 } } });
    c.send({ action: 'subscribe', patterns: ['flt.*'], filters: { priority: { min: 8, max: 2 } } });
    c.send({ action: 'subscribe', patterns: ['flt.*'], filters: { priority: { min: 2, top: 9 } } });
    await until(() => c.of('error').length === 4);
    expect(c.of('error').map((m) => [m.error.code, m.error.details.field])).toEqual([
      ['VALIDATION_ERROR', 'filters.bogus'],
      ['VALIDATION_ERROR', 'filters.data_filters'],
      ['VALIDATION_ERROR', 'filters.priority.min'],
      ['VALIDATION_ERROR', 'filters.priority.top'],
    ]);
    expect(c.of('error')[2].error.details).toMatchObject({
      reason: 'greater than filters.priority.max',
      errors: [{ field: 'filters.priority.min', reason: 'greater than filters.priority.max' }],
    });
    expect(c.of('subscribed')).toHaveLength(1);
    // The refused messages changed nothing: the first filters still apply.
    const kept = await emit('flt.x', { source: 's1' });
    await emit('flt.x', { source: 's2' });
    await until(() => c.of('event').length === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.of('event').map((m) => m.event.event_id)).toEqual([kept]);
    expect(c.socket.readyState).toBe(c.socket.OPEN);
  });

  it('leaves expired events out when resuming from last_event_id', async () => {
    const from = await emit('wsx.a');
    await emit('wsx.b', { expires_at: new Date(Date.now() + 500).toISOString() });
    const kept = await emit('wsx.c');
    await new Promise((r) => setTimeout(r, 700));
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['wsx.*'], last_event_id: from });
    await until(() => c.of('event').length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.of('event').map((m) => m.event.event_id)).toEqual([kept]);
  });

  it('resumes from last_event_id in a subscribe message; an unknown id gets an error message', async () => {
    const ids = [await emit('wsr.a'), await emit('wsr.b'), await emit('wsr.c')];
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['wsr.*'], last_event_id: 'evt_missing' });
    await until(() => c.of('error').length === 1);
    expect(c.of('error')[0].error.code).toBe('EVENT_NOT_FOUND');
    c.send({ action: 'subscribe', patterns: ['wsr.*'], last_event_id: ids[0] });
    await until(() => c.of('event').length === 2);
    const live = await emit('wsr.d');
    await until(() => c.of('event').length === 3);
    expect(c.of('event').map((m) => m.event.event_id)).toEqual([ids[1], ids[2], live]);
  });

  it('accepts the Authorization header and the /v1/events/stream path with query patterns', async () => {
    const c = await connect('/v1/events/stream?patterns=short.*', { authorization: `Bearer ${token}` });
    await until(() => c.of('subscribed').length === 1);
    const id = await emit('short.path');
    await until(() => c.of('event').length === 1);
    expect(c.of('event')[0].event.event_id).toBe(id);
  });

  it('refuses the upgrade without credentials (401) and with an unknown last_event_id (404)', async () => {
    await expect(connect('/api/v1/events/stream')).rejects.toMatchObject({ status: 401 });
    await expect(
      connect(`/api/v1/events/stream?token=${token}&last_event_id=evt_nope`),
    ).rejects.toMatchObject({
      status: 404,
    });
  });
});
