import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until } from './stream-clients.js';

describe('server-sent event streams', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let token: string;
  const open: { close(): void }[] = [];

  const emit = async (type: string, extra: Record<string, unknown> = {}, as = token) => {
    const res = await t.request('POST', '/api/v1/events', {
      token: as,
      body: { event_type: type, ...extra },
    });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };
  const sse = (query: string, headers: Record<string, string> = {}) => {
    const c = new RawSse(`${base}/api/v1/events/stream${query}`, {
      authorization: `Bearer ${token}`,
      ...headers,
    });
    open.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await startPlatform({ events: { stream_heartbeat_seconds: 1 } });
    base = await t.platform.listen();
    token = (await t.createUser('watcher', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await t.close();
  });

  it('streams matching events with id, event and data lines, unbuffered', async () => {
    const c = sse('?patterns=shop.*');
    await c.ready;
    expect(c.status).toBe(200);
    expect(c.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(c.headers['x-accel-buffering']).toBe('no');
    expect(c.headers['cache-control']).toContain('no-cache');
    const id = await emit('shop.opened', { source: 'till', data: { n: 1 } });
    await emit('other.thing');
    await until(() => c.events().length >= 1);
    const [frame] = c.events();
    expect(frame).toMatchObject({ id, event: 'shop.opened' });
    expect(JSON.parse(frame!.data!)).toMatchObject({
      event_id: id,
      event_type: 'shop.opened',
      source: 'till',
      data: { n: 1 },
    });
    expect(typeof JSON.parse(frame!.data!).sequence).toBe('number');
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events()).toHaveLength(1);
  });

  it('takes patterns repeated or comma-separated, plus source and priority filters', async () => {
    const c = sse('?patterns=a.*,b.**&patterns=c.x&source=s1&priority_min=3&priority_max=7');
    await c.ready;
    await emit('a.one', { source: 's1', priority: 5 });
    await emit('b.two.deep', { source: 's1', priority: 3 });
    await emit('c.x', { source: 's1', priority: 7 });
    await emit('a.one', { source: 's2', priority: 5 });
    await emit('a.one', { source: 's1', priority: 9 });
    await emit('d.no', { source: 's1', priority: 5 });
    await until(() => c.events().length >= 3);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events().map((f) => f.event)).toEqual(['a.one', 'b.two.deep', 'c.x']);
  });

  it('works for a browser-style EventSource with ?token= (named events per type)', async () => {
    const es = new EventSource(`${base}/api/v1/events/stream?patterns=browser.*&token=${token}`);
    open.push(es);
    const got: MessageEvent[] = [];
    es.addEventListener('browser.click', (e) => got.push(e));
    await new Promise<void>((resolve, reject) => {
      es.onopen = () => resolve();
      es.onerror = (e) => reject(e);
    });
    const id = await emit('browser.click', { data: { x: 1 } });
    await until(() => got.length === 1);
    expect(got[0]!.lastEventId).toBe(id);
    expect(JSON.parse(got[0]!.data).data).toEqual({ x: 1 });
    es.close();
  });

  it('answers 404 EVENT_NOT_FOUND as JSON before streaming when the resume id is unknown', async () => {
    const c = sse('?patterns=*', { 'last-event-id': 'evt_unknown' });
    await c.ready;
    await until(() => c.ended);
    expect(c.status).toBe(404);
    expect(JSON.parse(c.body).error.code).toBe('EVENT_NOT_FOUND');
  });

  it('refuses a stream without credentials with 401 and a malformed pattern with 422', async () => {
    const anonymous = new RawSse(`${base}/api/v1/events/stream`);
    open.push(anonymous);
    await anonymous.ready;
    expect(anonymous.status).toBe(401);
    const bad = sse('?patterns=a..b');
    await bad.ready;
    expect(bad.status).toBe(422);
  });

  it('resumes after Last-Event-ID from the store, then continues live without gap or duplicate', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await emit('resume.step', { data: { i } }));
    const c = sse('?patterns=resume.*', { 'last-event-id': ids[1]! });
    await c.ready;
    await until(() => c.events().length >= 3);
    ids.push(await emit('resume.step', { data: { i: 5 } }));
    await until(() => c.events().length >= 4);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events().map((f) => f.id)).toEqual(ids.slice(2));
    const viaQuery = sse(`?patterns=resume.*&last_event_id=${ids[3]}`);
    await until(() => viaQuery.events().length >= 2);
    expect(viaQuery.events().map((f) => f.id)).toEqual(ids.slice(4));
  });

  it('leaves expired events out when resuming', async () => {
    const from = await emit('expiry.step', { data: { i: 0 } });
    const expiring = await emit('expiry.step', {
      data: { i: 1 },
      expires_at: new Date(Date.now() + 500).toISOString(),
    });
    const kept = await emit('expiry.step', { data: { i: 2 } });
    await new Promise((r) => setTimeout(r, 700));
    expect((await t.request('GET', `/api/v1/events/${expiring}`, { token })).statusCode).toBe(410);
    const c = sse('?patterns=expiry.*', { 'last-event-id': from });
    await until(() => c.events().length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events().map((f) => f.id)).toEqual([kept]);
  });

  it('refuses a priority range whose minimum is above its maximum with 422 VALIDATION_ERROR', async () => {
    const c = sse('?patterns=*&priority_min=8&priority_max=2');
    await c.ready;
    await until(() => c.ended);
    expect(c.status).toBe(422);
    expect(JSON.parse(c.body).error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: {
        field: 'priority_min',
        reason: 'greater than priority_max',
        errors: [{ field: 'priority_min', reason: 'greater than priority_max' }],
      },
    });
    const unknown = sse('?patterns=*&bogus=1');
    await unknown.ready;
    expect(unknown.status).toBe(422);
    const equal = sse('?patterns=*&priority_min=5&priority_max=5');
    await equal.ready;
    expect(equal.status).toBe(200);
    equal.close();
  });

  it('has no gap and no duplicate when resuming while events are being emitted', async () => {
    const first = await emit('race.tick', { data: { i: -1 } });
    let stop = false;
    const emitted: string[] = [];
    const writer = (async () => {
      for (let i = 0; !stop && i < 400; i++) emitted.push(await emit('race.tick', { data: { i } }));
    })();
    await until(() => emitted.length >= 20);
    const c = sse('?patterns=race.*', { 'last-event-id': first });
    await c.ready;
    await until(() => emitted.length >= 60, 15_000);
    stop = true;
    await writer;
    await until(() => c.events().length >= emitted.length, 10_000, 'all race events');
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events().map((f) => f.id)).toEqual(emitted);
    const seqs = c.payloads().map((p) => p.sequence);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  }, 30_000);

  it('sends `: ping` comments and id-only checkpoints so a quiet filtered stream can resume from now', async () => {
    const c = sse('?patterns=never.matches');
    await c.ready;
    const last = await emit('noise.event');
    await until(() => c.frames.some((f) => f.id === last && f.data === undefined), 4000, 'checkpoint');
    await until(() => c.frames.some((f) => f.comment === 'ping'), 4000, 'ping');
    expect(c.events()).toHaveLength(0);
    // Resuming from the checkpoint id is valid and skips nothing that matches.
    const later = await emit('never.matches');
    const resumed = sse('?patterns=never.matches', { 'last-event-id': last });
    await until(() => resumed.events().length === 1);
    expect(resumed.events()[0]!.id).toBe(later);
  }, 20_000);

  it('streams confidential events only to admins and their emitter', async () => {
    const other = await t.createUser('peeker', ['user']);
    const mine = sse('?patterns=secret.*');
    const theirs = new RawSse(`${base}/api/v1/events/stream?patterns=secret.*`, {
      authorization: `Bearer ${other.access}`,
    });
    const admin = new RawSse(`${base}/api/v1/events/stream?patterns=secret.*`, {
      authorization: `Bearer ${await t.adminToken()}`,
    });
    open.push(theirs, admin);
    await Promise.all([mine.ready, theirs.ready, admin.ready]);
    const id = await emit('secret.plan', { security_level: 'confidential', data: { pin: '1234' } });
    const open2 = await emit('secret.plan', { data: { pin: 'none' } });
    await until(
      () => mine.events().length === 2 && admin.events().length === 2 && theirs.events().length === 1,
    );
    expect(mine.payloads()[0]).toMatchObject({ event_id: id, data: { pin: '1234' } });
    expect(theirs.events().map((f) => f.id)).toEqual([open2]);
  });

  it('counts live clients in subscriber_count', async () => {
    const c = sse('?patterns=counted.*');
    await c.ready;
    await until(() => t.platform.context.registry.get('stream_hub').metrics().active_connections! >= 1);
    const res = await t.request('POST', '/api/v1/events', { token, body: { event_type: 'counted.once' } });
    expect(res.data.data.event.subscriber_count).toBeGreaterThanOrEqual(1);
    const none = await t.request('POST', '/api/v1/events', { token, body: { event_type: 'uncounted.x' } });
    expect(none.data.data.event.subscriber_count).toBe(0);
  });
});
