import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until, WsClient } from './stream-clients.js';

describe('stream patterns from clients', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let wsBase: string;
  let token: string;
  const open: { close(): void }[] = [];

  const emit = async (type: string) => {
    const res = await t.request('POST', '/api/v1/events', { token, body: { event_type: type } });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };
  const connect = async () => {
    const c = new WsClient(`${wsBase}/api/v1/events/stream?token=${token}`);
    open.push(c);
    await c.opened;
    return c;
  };

  beforeAll(async () => {
    t = await startPlatform();
    base = await t.platform.listen();
    wsBase = base.replace(/^http/, 'ws');
    token = (await t.createUser('patterned', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await t.close();
  });

  it('refuses patterns that are neither a string nor an array of strings, changing nothing', async () => {
    const c = await connect();
    c.send({ action: 'subscribe', patterns: ['ptype.*'] });
    await until(() => c.of('subscribed').length === 1);
    for (const patterns of [null, 5, true, { a: 1 }, [['ptype.nested']], ['ok.x', 7]]) {
      c.send({ action: 'subscribe', patterns });
    }
    c.send({ action: 'unsubscribe', patterns: 5 });
    c.send({ action: 'ping' });
    await until(() => c.of('pong').length === 1);
    // null means "none given", as for filters: it subscribes to `*`; everything else is an error.
    expect(c.of('subscribed').map((m) => m.patterns)).toEqual([['ptype.*'], ['ptype.*', '*']]);
    expect(c.of('error')).toHaveLength(6);
    for (const m of c.of('error')) {
      expect(m.error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: { field: 'patterns', reason: 'must be a string or an array of strings' },
      });
    }
    expect(c.of('unsubscribed')).toHaveLength(0);
    // A comma-separated string still works.
    c.send({ action: 'unsubscribe', patterns: '*,ptype.*' });
    await until(() => c.of('unsubscribed').length === 1);
    expect(c.of('unsubscribed')[0]).toMatchObject({ patterns: [], removed: ['ptype.*', '*'] });
  });

  it('matches runs of wildcards as before, without a hundred of them holding up every emit', async () => {
    // Ten wildcard segments in a row, a hundred patterns a connection, twenty connections of different patterns:
    // matched by backtracking over every way to share a ten-segment type among the wildcards, that was seconds
    // of a blocked server for each event of ten segments.
    const heavy = (k: number) =>
      Array.from({ length: 100 }, (_, i) => `**.**.**.**.**.**.**.**.**.h${k}x${i}`);
    const clients: WsClient[] = [];
    for (let k = 0; k < 20; k++) {
      const c = await connect();
      c.send({ action: 'subscribe', patterns: heavy(k) });
      clients.push(c);
    }
    await until(() => clients.every((c) => c.of('subscribed').length === 1));
    // The same types as given; shown in their shortest form.
    expect(clients[0]!.of('subscribed')[0].patterns.slice(0, 2)).toEqual(['**.h0x0', '**.h0x1']);

    const started = performance.now();
    for (let i = 0; i < 5; i++) await emit('a.b.c.d.e.f.g.h.i.j');
    expect(performance.now() - started).toBeLessThan(1500);

    // Still matched: zero or more segments before the last one.
    const deep = await emit('a.b.c.d.e.f.g.h.i.h3x7');
    const bare = await emit('h3x7');
    await until(() => clients[3]!.of('event').length === 2, 5000, 'the matching events');
    expect(clients[3]!.of('event').map((m) => m.event.event_id)).toEqual([deep, bare]);
    expect(clients[2]!.of('event')).toHaveLength(0);

    // An unsubscribe names the pattern as given or in its shortest form.
    clients[3]!.send({ action: 'unsubscribe', patterns: ['**.**.**.**.**.**.**.**.**.h3x7', '**.h3x8'] });
    await until(() => clients[3]!.of('unsubscribed').length === 1);
    expect(clients[3]!.of('unsubscribed')[0].removed).toEqual(['**.h3x7', '**.h3x8']);
  });

  it('reads wildcard runs in any order as the same pattern on SSE', async () => {
    const c = new RawSse(`${base}/api/v1/events/stream?patterns=**.*.**.run,*.**.run`, {
      authorization: `Bearer ${token}`,
    });
    open.push(c);
    await c.ready;
    expect(c.status).toBe(200);
    await emit('run');
    const two = await emit('x.run');
    const three = await emit('x.y.run');
    await until(() => c.events().length === 2, 5000);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events().map((f) => f.id)).toEqual([two, three]);
  });
});
