import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until, WsClient } from './stream-clients.js';

// Clients with one selection share each flush's bytes; these check that every one of them still gets every
// event it selects, each as its own message, in order — and that clients with other selections do not.
const SAME = 15;
const BURST = 60;

describe('many stream clients with the same selection', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let owner: string;
  let other: string;
  const closers: Array<() => void> = [];
  const sse = (query: string, token: string) => {
    const c = new RawSse(`${base}/api/v1/events/stream${query}`, { authorization: `Bearer ${token}` });
    closers.push(() => c.close());
    return c;
  };
  const ws = async (query: string, token: string) => {
    const c = new WsClient(`${base.replace(/^http/, 'ws')}/api/v1/events/stream${query}&token=${token}`);
    closers.push(() => c.close());
    await c.opened;
    return c;
  };

  beforeAll(async () => {
    t = await startPlatform();
    base = await t.platform.listen();
    owner = (await t.createUser('burst-owner', ['user'])).access;
    other = (await t.createUser('burst-other', ['user'])).access;
  });
  afterAll(async () => {
    for (const close of closers) close();
    await t.close();
  });

  it('gives each client every event it selects, one message per event, in emission order', async () => {
    const sseSame = Array.from({ length: SAME }, () => sse('?patterns=burst.*', owner));
    const wsSame = await Promise.all(Array.from({ length: SAME }, () => ws('?patterns=burst.*', owner)));
    const urgent = sse('?patterns=burst.*&priority_min=5', owner);
    const outsider = sse('?patterns=burst.*', other);
    await Promise.all([...sseSame, urgent, outsider].map((c) => c.ready));
    await until(() => wsSame.every((c) => c.of('subscribed').length === 1));

    // The hub's figures, as an operator reads them.
    const admin = await t.adminToken();
    const hubMetrics = async () => {
      const res = await t.request('GET', '/api/v1/services/stream_hub', { token: admin });
      expect(res.statusCode).toBe(200);
      return res.data.data.metrics as Record<string, number>;
    };
    const flushed = async () => {
      const m = await hubMetrics();
      return { flushes: m['flushes']!, events: m['flushes']! * m['average_events_per_flush']! };
    };
    const before = await flushed();
    // Emitted all at once, so that several events are committed together and go out in shared writes.
    const emitted = await Promise.all(
      Array.from({ length: BURST }, async (_, i) => {
        const res = await t.request('POST', '/api/v1/events', {
          token: owner,
          body: {
            event_type: 'burst.item',
            priority: i % 2 === 0 ? 7 : 3,
            data: { i },
            ...(i % 3 === 0 ? { security_level: 'confidential' } : {}),
          },
        });
        expect(res.statusCode).toBe(201);
        return res.data.data.event as { event_id: string; priority: number; security_level?: string };
      }),
    );
    const all = emitted.map((e) => e.event_id);
    const confidential = new Set(emitted.filter((_, i) => i % 3 === 0).map((e) => e.event_id));

    await until(
      () =>
        sseSame.every((c) => c.events().length === BURST) &&
        wsSame.every((c) => c.of('event').length === BURST) &&
        outsider.events().length === BURST - confidential.size,
      20_000,
      'every client to receive its events',
    );
    // Stream order is commit order (sequence); it holds every emitted id exactly once.
    const order = sseSame[0]!.payloads().map((p) => p.event_id as string);
    expect([...order].sort()).toEqual([...all].sort());
    const sequences = sseSame[0]!.payloads().map((p) => p.sequence as number);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    for (const c of sseSame) expect(c.events().map((f) => f.id)).toEqual(order);
    for (const c of wsSame) expect(c.of('event').map((m) => m.event.event_id)).toEqual(order);
    for (const c of wsSame) expect(c.of('event')[0].event.data).toHaveProperty('i');

    // They went out several to a flush (one write per client for each), not one flush per event.
    const after = await flushed();
    expect(after.events - before.events).toBeGreaterThanOrEqual(BURST);
    expect(after.flushes - before.flushes).toBeLessThan(BURST);
    // Their time was measured: writing took some, and waiting for the write at least as long at p99 as at p50.
    const m = await hubMetrics();
    expect(m['average_flush_ms']).toBeGreaterThan(0);
    expect(m['offer_delay_p50_ms']).toBeGreaterThan(0);
    expect(m['offer_delay_p99_ms']).toBeGreaterThanOrEqual(m['offer_delay_p50_ms']!);

    const high = new Set(emitted.filter((_, i) => i % 2 === 0).map((e) => e.event_id));
    await until(() => urgent.events().length === high.size);
    expect(urgent.events().map((f) => f.id)).toEqual(order.filter((id) => high.has(id)));
    expect(outsider.events().map((f) => f.id)).toEqual(order.filter((id) => !confidential.has(id)));

    // subscriber_count adds up every client the event reaches, counted per selection.
    const count = async (body: Record<string, unknown>) => {
      const res = await t.request('POST', '/api/v1/events', { token: owner, body });
      return res.data.data.event.subscriber_count as number;
    };
    expect(await count({ event_type: 'burst.count', priority: 7 })).toBe(2 * SAME + 2);
    expect(await count({ event_type: 'burst.count', priority: 3, security_level: 'confidential' })).toBe(
      2 * SAME,
    );
  });
});
