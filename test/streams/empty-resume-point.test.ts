import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until, WsClient } from './stream-clients.js';

/**
 * An empty `?last_event_id=` means "no resume point", as an empty Last-Event-ID header and "" in a WebSocket
 * subscribe message do: the stream starts live, it is not refused with 404 "Event '' does not exist".
 */
describe('an empty last_event_id query parameter', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let token: string;
  const open: { close(): void }[] = [];

  const emit = async (type: string) => {
    const res = await t.request('POST', '/api/v1/events', { token, body: { event_type: type } });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };

  beforeAll(async () => {
    t = await startPlatform();
    base = await t.platform.listen();
    token = (await t.createUser('empty-resume', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await t.close();
  });

  it('starts an SSE stream live (no 404), like an empty Last-Event-ID header', async () => {
    await emit('emptyq.before');
    const viaQuery = new RawSse(`${base}/api/v1/events/stream?patterns=emptyq.*&last_event_id=`, {
      authorization: `Bearer ${token}`,
    });
    const viaHeader = new RawSse(`${base}/api/v1/events/stream?patterns=emptyq.*`, {
      authorization: `Bearer ${token}`,
      'last-event-id': '',
    });
    open.push(viaQuery, viaHeader);
    await Promise.all([viaQuery.ready, viaHeader.ready]);
    expect(viaHeader.status).toBe(200);
    expect(viaQuery.status, viaQuery.body).toBe(200);
    const id = await emit('emptyq.after');
    await until(() => viaQuery.events().length === 1 && viaHeader.events().length === 1);
    await new Promise((r) => setTimeout(r, 100));
    // Live only: the event from before the stream is not replayed.
    expect(viaQuery.events().map((f) => f.id)).toEqual([id]);
    expect(viaHeader.events().map((f) => f.id)).toEqual([id]);
  });

  it('takes the Last-Event-ID header when the query parameter is empty', async () => {
    const from = await emit('emptyh.step');
    const next = await emit('emptyh.step');
    const c = new RawSse(`${base}/api/v1/events/stream?patterns=emptyh.*&last_event_id=`, {
      authorization: `Bearer ${token}`,
      'last-event-id': from,
    });
    open.push(c);
    await c.ready;
    expect(c.status, c.body).toBe(200);
    await until(() => c.events().length === 1);
    expect(c.events().map((f) => f.id)).toEqual([next]);
  });

  it('opens a WebSocket with ?last_event_id= (no 404) and streams live events', async () => {
    const ws = new WsClient(
      `${base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${token}&patterns=emptyw.*&last_event_id=`,
    );
    open.push(ws);
    await ws.opened;
    await until(() => ws.of('subscribed').length === 1);
    const id = await emit('emptyw.after');
    await until(() => ws.of('event').length === 1);
    expect(ws.of('event')[0].event.event_id).toBe(id);
  });
});
