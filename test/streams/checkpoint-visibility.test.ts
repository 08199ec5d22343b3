import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until, WsClient } from './stream-clients.js';

/** Checkpoints and resume points name only events the reader may see. */
describe('checkpoints of a reader who may not see every event', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let reader: { id: string; access: string };
  let author: { id: string; access: string };
  const open: { close(): void }[] = [];

  const emit = async (type: string, extra: Record<string, unknown> = {}, token = author.access) => {
    const res = await t.request('POST', '/api/v1/events', { token, body: { event_type: type, ...extra } });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };
  const secret = (type: string) => emit(type, { security_level: 'confidential' });
  const sse = (query: string, lastEventId?: string) => {
    const c = new RawSse(`${base}/api/v1/events/stream${query}`, {
      authorization: `Bearer ${reader.access}`,
      ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
    });
    open.push(c);
    return c;
  };
  const checkpoints = (c: RawSse) => c.frames.filter((f) => f.id !== undefined && f.data === undefined);
  const heartbeats = (n: number) => new Promise((r) => setTimeout(r, n * 1000 + 300));

  beforeAll(async () => {
    t = await startPlatform({ events: { stream_heartbeat_seconds: 1 } });
    base = await t.platform.listen();
    reader = await t.createUser('cp-reader');
    author = await t.createUser('cp-author');
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await t.close();
  });

  it('never hands an SSE reader the id of a confidential event it may not see', async () => {
    const c = sse('?patterns=cp.none');
    await c.ready;
    const visible = await emit('cp.noise');
    await until(() => checkpoints(c).some((f) => f.id === visible), 4000, 'checkpoint of the visible event');
    const hidden = await secret('cp.noise');
    await heartbeats(2);
    expect(checkpoints(c).map((f) => f.id)).not.toContain(hidden);
    // Resuming from the last checkpoint works: no 404, and the next matching event comes once.
    const last = checkpoints(c).at(-1)!.id!;
    const next = await emit('cp.none');
    const resumed = sse('?patterns=cp.none', last);
    await until(() => resumed.events().length >= 1);
    expect(resumed.status).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    expect(resumed.events().map((f) => f.id)).toEqual([next]);
  });

  it('never hands a WebSocket reader the id of a confidential event it may not see', async () => {
    const ws = new WsClient(`${base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${reader.access}`);
    open.push(ws);
    await ws.opened;
    ws.send({ action: 'subscribe', patterns: ['cpw.none'] });
    await until(() => ws.of('subscribed').length === 1);
    const visible = await emit('cpw.noise');
    await until(() => ws.of('checkpoint').some((m) => m.last_event_id === visible), 4000, 'checkpoint');
    const hidden = await secret('cpw.noise');
    await heartbeats(2);
    expect(ws.of('checkpoint').map((m) => m.last_event_id)).not.toContain(hidden);
  });

  it('resumes from any checkpoint or event id it was given with no gap and no duplicate', async () => {
    const c = sse('?patterns=cpr.*');
    await c.ready;
    const seen: string[] = [];
    seen.push(await emit('cpr.one'));
    await secret('cpr.hidden');
    await emit('other.noise');
    await secret('other.hidden');
    await heartbeats(2);
    seen.push(await emit('cpr.two'));
    await secret('other.hidden');
    await heartbeats(2);
    await until(() => c.events().length === 2);
    expect(c.events().map((f) => f.id)).toEqual(seen);
    const handedOut = c.frames.filter((f) => f.id !== undefined);
    expect(
      handedOut.some((f) => f.data === undefined),
      'a checkpoint was sent',
    ).toBe(true);
    c.close();
    // Every id handed out resumes (200), with exactly the matching events the stream sent after it, then on.
    const later = await emit('cpr.three');
    for (const [i, frame] of handedOut.entries()) {
      const expected = [
        ...handedOut
          .slice(i + 1)
          .filter((f) => f.data !== undefined)
          .map((f) => f.id),
        later,
      ];
      const resumed = sse('?patterns=cpr.*', frame.id);
      await until(
        () => resumed.ended || resumed.events().length >= expected.length,
        4000,
        `resume ${frame.id}`,
      );
      expect(resumed.status, `resuming from ${frame.id}`).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
      expect(resumed.events().map((f) => f.id)).toEqual(expected);
      resumed.close();
    }
  });
});
