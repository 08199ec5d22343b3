import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until, WsClient } from './stream-clients.js';

/**
 * Two instances on one PostgreSQL and Redis (cluster project). The embedded project has one process by
 * design, so there the second "instance" is the first one and the same guarantees are checked in one process.
 */
describe('events across instances', { timeout: 20_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let tokenA: string;
  let tokenB: string;
  let baseB: string;
  const open: { close(): void }[] = [];

  beforeAll(async () => {
    a = await startPlatform();
    b = a.backend === 'cluster' ? await startPlatform({}, { storage: a.storage }) : a;
    await a.createUser('across', ['user']);
    tokenA = (await a.login('across', 'user-password-1')).access;
    tokenB = (await b.login('across', 'user-password-1')).access;
    baseB = await b.platform.listen();
  });
  afterAll(async () => {
    for (const c of open) c.close();
    if (b !== a) await b.platform.close();
    await a.close();
  });

  it('delivers an event emitted on one instance to SSE and WebSocket clients of the other', async () => {
    const sse = new RawSse(`${baseB}/api/v1/events/stream?patterns=cross.*`, {
      authorization: `Bearer ${tokenB}`,
    });
    const ws = new WsClient(`${baseB.replace(/^http/, 'ws')}/api/v1/events/stream?token=${tokenB}`);
    open.push(sse, ws);
    await Promise.all([sse.ready, ws.opened]);
    ws.send({ action: 'subscribe', patterns: ['cross.**'] });
    await until(() => ws.of('subscribed').length === 1);
    const res = await a.request('POST', '/api/v1/events', {
      token: tokenA,
      body: { event_type: 'cross.instance', data: { from: 'a' } },
    });
    expect(res.statusCode).toBe(201);
    const id = res.data.data.event.event_id;
    await until(() => sse.events().length === 1 && ws.of('event').length === 1, 5000, 'fan-out');
    expect(sse.events()[0]!.id).toBe(id);
    expect(ws.of('event')[0].event).toMatchObject({ event_id: id, data: { from: 'a' } });
  });

  it('numbers events 1..N without gap or duplicate while both instances emit at once', async () => {
    const sse = new RawSse(`${baseB}/api/v1/events/stream?patterns=*`, { authorization: `Bearer ${tokenB}` });
    open.push(sse);
    await sse.ready;
    const before = await a.platform.context.database.db
      .selectFrom('events')
      .select((eb) => eb.fn.max('sequence').as('max'))
      .executeTakeFirstOrThrow();
    const start = Number(before.max ?? 0);
    const emitOn = (t: TestPlatform, token: string, n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          t.request('POST', '/api/v1/events', {
            token,
            body: { event_type: 'concurrent.write', data: { i } },
          }),
        ),
      );
    const rounds = 4;
    for (let r = 0; r < rounds; r++) {
      const results = (await Promise.all([emitOn(a, tokenA, 50), emitOn(b, tokenB, 50)])).flat();
      for (const res of results) expect(res.statusCode).toBe(201);
    }
    const rows = await a.platform.context.database.db
      .selectFrom('events')
      .select(['sequence', 'event_type'])
      .where('sequence', '>', start)
      .orderBy('sequence')
      .execute();
    const seqs = rows.map((r) => Number(r.sequence));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => start + 1 + i));
    expect(rows.filter((r) => r.event_type === 'concurrent.write')).toHaveLength(rounds * 100);
    // The other instance's live clients see them all, in sequence order.
    await until(() => sse.payloads().filter((p) => p.sequence > start).length >= seqs.length, 10_000);
    const streamed = sse
      .payloads()
      .map((p) => p.sequence)
      .filter((s) => s > start);
    expect(streamed).toEqual(seqs);
  });
});
