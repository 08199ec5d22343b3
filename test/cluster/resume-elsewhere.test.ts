import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawSse, until, WsClient } from '../streams/stream-clients.js';
import { Cluster, type Instance } from './cluster-instances.js';

/**
 * Two real instances emit at once; a stream client reading from A drops and resumes on B from its last event
 * id (SSE with Last-Event-ID, WebSocket with last_event_id): between them they see every event once, in
 * sequence order (decisions §4: resuming never skips or repeats an event).
 */
describe('a stream resumed on another instance', { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let a: Instance;
  let b: Instance;
  const admin = new Map<Instance, string>();
  const open: { close(): void }[] = [];

  beforeAll(async () => {
    cluster = await Cluster.start(2);
    [a, b] = cluster.instances as [Instance, Instance];
    for (const i of cluster.instances) admin.set(i, await i.adminToken());
  }, 90_000);
  afterAll(async () => {
    for (const c of open) c.close();
    await cluster?.close();
  });

  /** Emits `count` events of `type`, alternating between A and B, 10 at a time; answers their ids. */
  const emitBoth = async (type: string, count: number) => {
    const ids: string[] = [];
    for (let n = 0; n < count; n += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, k) => {
          const on = (n + k) % 2 === 0 ? a : b;
          return on.api('POST', '/api/v1/events', {
            token: admin.get(on)!,
            body: { event_type: type, data: { n: n + k } },
          });
        }),
      );
      for (const r of batch) {
        expect(r.status).toBe(201);
        ids.push(r.data.data.event.event_id);
      }
    }
    return ids;
  };

  const check = (seen: { event_id: string; sequence: number }[], acknowledged: string[]) => {
    const ids = seen.map((e) => e.event_id);
    expect(new Set(ids).size, 'no event twice').toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(acknowledged));
    const seqs = seen.map((e) => e.sequence);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
  };

  it('SSE: drops on A mid-stream, resumes on B with Last-Event-ID, no gap or duplicate', async () => {
    const first = new RawSse(`${a.base}/api/v1/events/stream?patterns=resse.*`, {
      authorization: `Bearer ${admin.get(a)}`,
    });
    open.push(first);
    await first.ready;
    const emitting = emitBoth('resse.entry', 200);
    await until(() => first.events().length >= 40, 10_000, 'the first events on A');
    first.close();
    const before = first.payloads();
    const last = before.at(-1)!.event_id as string;
    const second = new RawSse(`${b.base}/api/v1/events/stream?patterns=resse.*`, {
      authorization: `Bearer ${admin.get(b)}`,
      'last-event-id': last,
    });
    open.push(second);
    await second.ready;
    expect(second.status).toBe(200);
    const acknowledged = await emitting;
    await until(() => before.length + second.events().length >= 200, 10_000, 'the rest on B');
    await new Promise((r) => setTimeout(r, 300));
    check([...before, ...second.payloads()], acknowledged);
  });

  it('WebSocket: drops on B mid-stream, resumes on A with last_event_id, no gap or duplicate', async () => {
    const wsOn = (i: Instance) => {
      const ws = new WsClient(`${i.base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${admin.get(i)}`);
      open.push(ws);
      return ws;
    };
    const first = wsOn(b);
    await first.opened;
    first.send({ action: 'subscribe', patterns: ['rews.*'] });
    await until(() => first.of('subscribed').length === 1, 5000, 'the subscription on B');
    const emitting = emitBoth('rews.entry', 200);
    await until(() => first.of('event').length >= 40, 10_000, 'the first events on B');
    first.close();
    const before = first.of('event').map((m) => m.event);
    const second = wsOn(a);
    await second.opened;
    second.send({ action: 'subscribe', patterns: ['rews.*'], last_event_id: before.at(-1).event_id });
    const acknowledged = await emitting;
    await until(() => before.length + second.of('event').length >= 200, 10_000, 'the rest on A');
    await new Promise((r) => setTimeout(r, 300));
    expect(second.of('error')).toEqual([]);
    check([...before, ...second.of('event').map((m) => m.event)], acknowledged);
  });
});
