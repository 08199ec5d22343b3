import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamHub } from '../../src/streams/stream-hub.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { until, WsClient } from './stream-clients.js';

// 120 × 100 KiB ≈ 12 MiB: more than the loopback socket buffers take, so a client that stops reading leaves
// events queued on the server (fewer than the default buffer of 1000, so it stays live, not catching up).
const BLOB = 'x'.repeat(100 * 1024);
const EVENTS = 120;

/** WebSocket clients whose socket is full: what they send meanwhile, and what they get once they read again. */
describe('a WebSocket client that is not reading', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let wsBase: string;
  let token: string;
  const clients: WsClient[] = [];

  const emit = async (type: string, data: Record<string, unknown> = {}) => {
    const res = await t.request('POST', '/api/v1/events', { token, body: { event_type: type, data } });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };
  const connect = async (query: string) => {
    const c = new WsClient(`${wsBase}/api/v1/events/stream?token=${token}${query}`);
    clients.push(c);
    await c.opened;
    return c;
  };
  const hub = () => t.platform.context.registry.get('stream_hub') as StreamHub;
  /** The messages after the n-th (0-based) message of this type. */
  const messagesAfter = (c: WsClient, type: string, n: number) => {
    let seen = -1;
    const i = c.messages.findIndex((m) => m.message_type === type && ++seen === n);
    expect(i).toBeGreaterThanOrEqual(0);
    return c.messages.slice(i + 1);
  };

  beforeAll(async () => {
    t = await startPlatform();
    wsBase = (await t.platform.listen()).replace(/^http/, 'ws');
    token = (await t.createUser('congested', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await t.close();
  });

  it('resuming from last_event_id while events wait to be written sends each event after it once, in order', async () => {
    const c = await connect('&patterns=cgr.*');
    await until(() => c.of('subscribed').length === 1);
    c.socket.pause();
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i++) ids.push(await emit('cgr.item', { i, blob: BLOB }));
    await until(() => hub().metrics().queued_events! > 0, 5000, 'events queued for the stalled client');

    c.send({ action: 'subscribe', patterns: ['cgr.*'], last_event_id: ids[9] });
    await until(() => hub().metrics().catching_up_connections === 1, 5000, 'the resume to start');
    c.socket.resume();
    await until(() => hub().metrics().catching_up_connections === 0, 15_000, 'the resume to finish');
    const live = await emit('cgr.item', { i: 'live' });
    await until(() => c.of('event').some((m) => m.event.event_id === live), 10_000, 'the live event');
    await new Promise((r) => setTimeout(r, 200));

    // After the answer to the resuming subscribe: the events after ids[9], then the live one — nothing else.
    const resumed = messagesAfter(c, 'subscribed', 1).filter((m) => m.message_type === 'event');
    expect(resumed.map((m) => m.event.event_id)).toEqual([...ids.slice(10), live]);
  });

  it('sends no event of a pattern after the answer to its unsubscribe', async () => {
    const c = await connect('&patterns=cgu.*,cgk.*');
    await until(() => c.of('subscribed').length === 1);
    c.socket.pause();
    for (let i = 0; i < EVENTS; i++) await emit(i % 2 ? 'cgu.item' : 'cgk.item', { i, blob: BLOB });
    await until(() => hub().metrics().queued_events! > 0, 5000, 'events queued for the stalled client');

    c.send({ action: 'unsubscribe', patterns: ['cgu.*'] });
    const removed = {
      event_type: 'cgu.item',
      source: 'api',
      priority: 5,
      security_level: 'internal',
      emitter_id: null,
    };
    await until(() => hub().countMatching(removed, () => ({})) === 0, 5000, 'the unsubscribe to apply');
    c.socket.resume();
    await until(() => c.of('unsubscribed').length === 1, 10_000);
    const kept = await emit('cgk.item', { i: 'last' });
    await until(() => c.of('event').some((m) => m.event.event_id === kept), 10_000, 'the kept pattern');

    const later = messagesAfter(c, 'unsubscribed', 0).filter((m) => m.message_type === 'event');
    expect(later.length).toBeGreaterThan(0);
    expect(later.filter((m) => m.event.event_type === 'cgu.item')).toEqual([]);
    const seqs = c.of('event').map((m) => m.event.sequence);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it('keeps the server’s buffer bounded for a client that sends messages without reading the answers', async () => {
    const c = await connect('');
    c.socket.pause();
    // Each bad message is answered with an error message that names it (larger than the message itself).
    const bad = JSON.stringify({ action: 'subscribe', patterns: [`${'x'.repeat(250)}..`] });
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 5000; i++) c.socket.send(bad);
      await new Promise((r) => setTimeout(r, 50));
    }
    // 40 000 answers of ~700 bytes would be ~28 MB; the server holds about a megabyte.
    expect(hub().metrics().buffered_bytes!).toBeLessThan(4 * 1024 * 1024);

    // Reading again, the client gets the answers (in order) and the socket still works.
    c.socket.resume();
    c.send({ action: 'ping' });
    await until(() => c.of('pong').length === 1, 20_000, 'the pong after the backlog');
    expect(c.of('error')).toHaveLength(40_000);
    expect(c.messages.at(-1).message_type).toBe('pong');
  });
});
