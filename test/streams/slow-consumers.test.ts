import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until } from './stream-clients.js';

const BUFFER = 50;
const EVENTS = 1500;
// 1500 × 6 KiB ≈ 9 MiB: more than the loopback socket buffers take, so a client that stops reading is felt.
const PAYLOAD = { blob: 'x'.repeat(6 * 1024) };

async function emitMany(t: TestPlatform, token: string, type: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) =>
      t.request('POST', '/api/v1/events', {
        token,
        body: { event_type: type, data: { i: i + j, ...PAYLOAD } },
      }),
    );
    for (const res of await Promise.all(batch)) expect(res.statusCode).toBe(201);
  }
}

/** Samples the hub's measured buffers while `work` runs; returns the largest values seen. */
async function peakBuffers(t: TestPlatform, work: () => Promise<void>) {
  const hub = t.platform.context.registry.get('stream_hub');
  const peak = { queued: 0, bytes: 0 };
  const timer = setInterval(() => {
    const m = hub.metrics();
    peak.queued = Math.max(peak.queued, m.queued_events ?? 0);
    peak.bytes = Math.max(peak.bytes, m.buffered_bytes ?? 0);
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return peak;
}

describe('slow stream consumers', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let token: string;
  const open: RawSse[] = [];
  const client = (query: string, options: { paused?: boolean; headers?: Record<string, string> } = {}) => {
    const c = new RawSse(
      `${base}/api/v1/events/stream${query}`,
      { authorization: `Bearer ${token}`, ...(options.headers ?? {}) },
      { paused: options.paused ?? false },
    );
    open.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await startPlatform({ events: { stream_buffer_size: BUFFER, stream_max_lag_seconds: 30 } });
    base = await t.platform.listen();
    token = (await t.createUser('bulk', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await t.close();
  });

  it('keeps a stalled client bounded, never delays the others, and lets it catch up in order', async () => {
    const hub = t.platform.context.registry.get('stream_hub');
    const slow = client('?patterns=bulk.*', { paused: true });
    const fast = client('?patterns=bulk.*');
    await Promise.all([slow.ready, fast.ready]);
    const catchUpsBefore = hub.metrics().catch_ups!;

    const peak = await peakBuffers(t, () => emitMany(t, token, 'bulk.item', EVENTS));
    await until(() => fast.events().length === EVENTS, 20_000, 'the fast client to get every event');

    // The stalled client fell back to catch-up rather than buffering without bound.
    expect(hub.metrics().catch_ups!).toBeGreaterThan(catchUpsBefore);
    expect(peak.queued).toBeLessThanOrEqual(BUFFER + 1);
    expect(peak.bytes).toBeLessThan(256 * 1024);

    // A slow client does not hold the others up: a new event reaches the fast client at once.
    const sent = Date.now();
    const probe = await t.request('POST', '/api/v1/events', { token, body: { event_type: 'bulk.probe' } });
    await until(() => fast.events().some((f) => f.id === probe.data.data.event.event_id), 2000, 'the probe');
    expect(Date.now() - sent).toBeLessThan(1000);

    // Reading again, the slow client gets everything from the store, then rejoins the live feed.
    slow.resume();
    await until(() => slow.events().length === EVENTS + 1, 30_000, 'the slow client to catch up');
    const live = await t.request('POST', '/api/v1/events', { token, body: { event_type: 'bulk.after' } });
    await until(() => slow.events().length === EVENTS + 2, 5000, 'the live event after catching up');
    await until(() => fast.events().length === EVENTS + 2, 5000);
    expect(slow.events().map((f) => f.id)).toEqual(fast.events().map((f) => f.id));
    expect(slow.events().at(-1)!.id).toBe(live.data.data.event.event_id);
    const seqs = slow.payloads().map((p) => p.sequence);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    await until(() => hub.metrics().catching_up_connections === 0, 5000);
  }, 60_000);
});

describe('a consumer that stays behind', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let token: string;
  const open: RawSse[] = [];

  beforeAll(async () => {
    t = await startPlatform({ events: { stream_buffer_size: BUFFER, stream_max_lag_seconds: 1 } });
    base = await t.platform.listen();
    token = (await t.createUser('laggard', ['user'])).access;
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await t.close();
  });

  it('is closed with a final overflow message and resumes from its last event id', async () => {
    const headers = { authorization: `Bearer ${token}` };
    const stalled = new RawSse(`${base}/api/v1/events/stream?patterns=lag.*`, headers, { paused: true });
    const fast = new RawSse(`${base}/api/v1/events/stream?patterns=lag.*`, headers);
    open.push(stalled, fast);
    await Promise.all([stalled.ready, fast.ready]);
    const hub = t.platform.context.registry.get('stream_hub');
    await emitMany(t, token, 'lag.item', EVENTS);
    await until(() => hub.metrics().overflow_closes! >= 1, 10_000, 'the overflow close');
    stalled.resume();
    await until(() => stalled.ended, 10_000, 'the stalled stream to end');
    await until(() => fast.events().length === EVENTS, 20_000);
    const overflow = stalled.frames.find((f) => f.event === 'overflow');
    expect(overflow).toBeDefined();
    const final = JSON.parse(overflow!.data!);
    expect(final).toMatchObject({ reason: 'overflow' });
    const got = stalled.events().filter((f) => f.event !== 'overflow');
    expect(final.last_event_id).toBe(got.at(-1)?.id ?? null);

    const resumed = new RawSse(`${base}/api/v1/events/stream?patterns=lag.*`, {
      ...headers,
      'last-event-id': final.last_event_id,
    });
    open.push(resumed);
    await until(() => got.length + resumed.events().length === EVENTS, 20_000, 'the rest after resuming');
    expect([...got, ...resumed.events()].map((f) => f.id)).toEqual(fast.events().map((f) => f.id));
  }, 60_000);
});
