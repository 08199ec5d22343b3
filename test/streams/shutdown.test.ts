import { expect, it } from 'vitest';
import { startPlatform } from '../helpers/test-platform.js';
import { RawSse, until, WsClient } from './stream-clients.js';

it('ends open streams with a shutdown message so closing the platform is not held up', async () => {
  const t = await startPlatform();
  try {
    const base = await t.platform.listen();
    const token = (await t.createUser('leaver', ['user'])).access;
    // The set-up's own platform events (the logins, user.created) are stored without the requests waiting for
    // them: once they are, bye.now is the newest event, whatever order concurrent batches commit in.
    const admin = await t.adminToken();
    const stored = async (type: string) =>
      (await t.request('GET', `/api/v1/events?event_type=${type}`, { token: admin })).data.data.events.length;
    for (let i = 0; (await stored('auth.login')) < 2 || (await stored('user.created')) < 1; i++) {
      if (i === 100) throw new Error('the set-up events were not stored within 2 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const emitted = await t.request('POST', '/api/v1/events', { token, body: { event_type: 'bye.now' } });
    const sse = new RawSse(`${base}/api/v1/events/stream?patterns=bye.*`, {
      authorization: `Bearer ${token}`,
    });
    const ws = new WsClient(
      `${base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${token}&patterns=bye.*`,
    );
    await Promise.all([sse.ready, ws.opened]);
    const started = Date.now();
    await t.platform.close();
    expect(Date.now() - started).toBeLessThan(3000);
    await until(() => sse.ended && ws.closeCode !== undefined, 3000, 'both streams to end');
    const final = sse.frames.find((f) => f.event === 'shutdown');
    expect(JSON.parse(final!.data!)).toMatchObject({
      reason: 'shutdown',
      last_event_id: emitted.data.data.event.event_id,
    });
  } finally {
    await t.close();
  }
}, 20_000);

it('ends WebSocket streams with a shutdown message carrying the resume point, then close code 1001', async () => {
  const t = await startPlatform();
  try {
    const base = await t.platform.listen();
    const token = (await t.createUser('ws-leaver', ['user'])).access;
    const emitted = await t.request('POST', '/api/v1/events', { token, body: { event_type: 'wsbye.now' } });
    const id = emitted.data.data.event.event_id;
    const wsBase = base.replace(/^http/, 'ws');
    // One live on query patterns, one resuming from the event, one connected but not subscribed.
    const live = new WsClient(`${wsBase}/api/v1/events/stream?token=${token}&patterns=wsbye.*`);
    const resumed = new WsClient(`${wsBase}/api/v1/events/stream?token=${token}&patterns=wsbye.*`);
    const idle = new WsClient(`${wsBase}/api/v1/events/stream?token=${token}`);
    await Promise.all([live.opened, resumed.opened, idle.opened]);
    resumed.send({ action: 'subscribe', patterns: ['other.*'], last_event_id: id });
    await until(() => live.of('subscribed').length === 1 && resumed.of('subscribed').length === 2);
    await t.platform.close();
    await until(
      () => [live, resumed, idle].every((c) => c.closeCode !== undefined),
      3000,
      'the sockets to close',
    );
    for (const c of [live, resumed, idle]) {
      expect(c.closeCode).toBe(1001);
      expect(c.messages.at(-1)).toMatchObject({ message_type: 'shutdown', reason: 'shutdown' });
    }
    expect(live.messages.at(-1).last_event_id).toBe(id);
    expect(resumed.messages.at(-1).last_event_id).toBe(id);
  } finally {
    await t.close();
  }
}, 20_000);
