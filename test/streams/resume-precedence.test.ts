import net from 'node:net';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until } from './stream-clients.js';

/**
 * A TCP relay in front of the platform whose connections the test can cut: to the client this is the server
 * closing the stream (as a restart or a proxy timeout does), so a real EventSource reconnects by itself.
 */
async function startRelay(target: string): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('resuming a stream given both ?last_event_id= and a Last-Event-ID header', {
  timeout: 30_000,
}, () => {
  let t: TestPlatform;
  let base: string;
  let token: string;
  const open: { close(): unknown }[] = [];

  const emit = async (type: string) => {
    const res = await t.request('POST', '/api/v1/events', { token, body: { event_type: type } });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };

  beforeAll(async () => {
    t = await startPlatform();
    base = await t.platform.listen();
    token = (await t.createUser('resumer', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of open) await c.close();
    await t.close();
  });

  it('resumes after the header, the later position a reconnecting client sends', async () => {
    const ids = [await emit('both.step'), await emit('both.step'), await emit('both.step')];
    const c = new RawSse(`${base}/api/v1/events/stream?patterns=both.*&last_event_id=${ids[0]}`, {
      authorization: `Bearer ${token}`,
      'last-event-id': ids[1]!,
    });
    open.push(c);
    await c.ready;
    expect(c.status, c.body).toBe(200);
    await until(() => c.events().length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events().map((f) => f.id)).toEqual([ids[2]]);
  });

  it('sends an EventSource opened with ?last_event_id= no event twice across reconnects', async () => {
    const relay = await startRelay(base);
    open.push(relay);
    const first = await emit('reconnect.step');
    const sent = [await emit('reconnect.step'), await emit('reconnect.step')];
    const es = new EventSource(
      `${relay.url}/api/v1/events/stream?patterns=reconnect.*&last_event_id=${first}&token=${token}`,
    );
    open.push(es);
    const got: string[] = [];
    let opened = 0;
    es.addEventListener('reconnect.step', (e) => got.push(e.lastEventId));
    es.onopen = () => {
      opened++;
    };
    await until(() => got.length === 2, 5000, 'the resumed events');
    for (let round = 2; round <= 3; round++) {
      sent.push(await emit('reconnect.step'));
      await until(() => got.length >= sent.length, 5000, 'the live event');
      relay.cut();
      // The server asks for `retry: 3000`; the client comes back with Last-Event-ID and its original URL.
      await until(() => opened === round, 10_000, 'the EventSource to reconnect');
    }
    sent.push(await emit('reconnect.step'));
    await until(() => got.length >= sent.length, 5000, 'the event after the reconnects');
    await new Promise((r) => setTimeout(r, 200));
    es.close();
    expect(got).toEqual(sent);
  });
});
