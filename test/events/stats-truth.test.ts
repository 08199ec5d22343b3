import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';

/**
 * GET /api/v1/events/stats and /events/health against a known workload: exact counts, range edges (inclusive,
 * any offset), empty ranges, real stream clients and a webhook target that answers known statuses.
 */
describe('event statistics and health from a known workload', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let base: string;
  const rx = new Receiver();
  const stamps: string[] = [];

  const get = async (url: string) => {
    const res = await t.request('GET', url, { token: admin });
    expect(res.statusCode).toBe(200);
    return res.data.data;
  };
  const stats = (start: string, end: string, extra = '') =>
    get(
      `/api/v1/events/stats?start_time=${encodeURIComponent(start)}&end_time=${encodeURIComponent(end)}${extra}`,
    );

  beforeAll(async () => {
    t = await startPlatform();
    base = await t.platform.listen();
    admin = await t.adminToken();
    await rx.start();
    // Wait until the login's own event is stored, so the ranges below hold this workload only.
    expect(
      await eventually(async () => (await get('/api/v1/events?event_type=auth.login')).events.length === 1),
    ).toBe(true);
    for (const [type, source] of [
      ['truth.a', 'one'],
      ['truth.b', 'two'],
      ['truth.a', 'one'],
      ['truth.a', 'two'],
      ['truth.c', 'one'],
    ] as const) {
      const res = await t.request('POST', '/api/v1/events', {
        token: admin,
        body: { event_type: type, source },
      });
      expect(res.statusCode).toBe(201);
      stamps.push(res.data.data.event.timestamp);
    }
  });
  afterAll(async () => {
    await rx.close();
    await t.close();
  });

  it('counts exactly the events of a range, both ends included', async () => {
    const s = await stats(stamps[1]!, stamps[3]!);
    // Events 1..3 (and any of the same milliseconds, which there are not: their stamps differ).
    const inside = stamps.filter((x) => x >= stamps[1]! && x <= stamps[3]!).length;
    expect(s.summary.total_events).toBe(inside);
    const all = await stats(stamps[0]!, stamps[4]!, '&group_by=day');
    expect(all.summary).toMatchObject({ total_events: 5, unique_event_types: 3 });
    expect(all.by_event_type.map((r: any) => [r.event_type, r.count, r.percentage])).toEqual([
      ['truth.a', 3, 60],
      ['truth.b', 1, 20],
      ['truth.c', 1, 20],
    ]);
    expect(all.by_source.map((r: any) => [r.source, r.count])).toEqual([
      ['one', 3],
      ['two', 2],
    ]);
    expect(all.timeline.reduce((n: number, b: any) => n + b.event_count, 0)).toBe(5);
    for (const b of all.timeline) expect(b.timestamp).toMatch(/T00:00:00\.000Z$/);
  });

  it('reads a range given with a UTC offset as the same instants', async () => {
    const plusTwo = (iso: string) => {
      const d = new Date(Date.parse(iso) + 2 * 3_600_000).toISOString();
      return `${d.slice(0, -1)}+02:00`;
    };
    const utc = await stats(stamps[0]!, stamps[4]!);
    const offset = await stats(plusTwo(stamps[0]!), plusTwo(stamps[4]!));
    expect(offset.summary).toEqual(utc.summary);
    expect(offset.time_range).toEqual(utc.time_range);
  });

  it('answers an empty range with zeros, never NaN or null', async () => {
    const s = await stats('2001-01-01T00:00:00Z', '2001-01-01T00:00:00Z');
    expect(s.summary).toEqual({
      total_events: 0,
      events_per_minute: 0,
      unique_event_types: 0,
      active_subscriptions: 0,
      average_processing_time_ms: 0,
    });
    expect([s.by_event_type, s.by_source, s.timeline]).toEqual([[], [], []]);
  });

  it('counts real stream clients while they are connected, and none after', async () => {
    const clients: { close(): void }[] = [];
    for (let i = 0; i < 3; i++) {
      const es = new EventSource(`${base}/api/v1/events/stream?token=${admin}`);
      clients.push(es);
      await new Promise<void>((resolve, reject) => {
        es.onopen = () => resolve();
        es.onerror = (e) => reject(e);
      });
    }
    for (let i = 0; i < 2; i++) {
      const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${admin}`);
      clients.push({ close: () => ws.close() });
      await new Promise((resolve) => ws.once('open', resolve));
    }
    expect((await get('/api/v1/events/health')).metrics.active_connections).toBe(5);
    for (const c of clients) c.close();
    expect(
      await eventually(async () => (await get('/api/v1/events/health')).metrics.active_connections === 0),
    ).toBe(true);
  });

  it('measures delivery errors and latency from what the target answered', async () => {
    let n = 0;
    rx.respond = () => ({ status: n++ % 2 === 0 ? 200 : 500, delayMs: 30 });
    const sub = await t.request('POST', '/api/v1/events/subscriptions', {
      token: admin,
      body: {
        name: 'truth',
        event_patterns: ['hooked.*'],
        webhook_config: {
          url: `${rx.url}/hook`,
          retry_policy: { max_attempts: 1, retry_delay_seconds: 1, exponential_backoff: false },
        },
      },
    });
    expect(sub.statusCode).toBe(201);
    const before = await get('/api/v1/events/health');
    expect(before.metrics).toMatchObject({ error_rate: 0, delivery_latency_ms: 0, queue_size: 0 });
    // One at a time, so the answers alternate in order: ok, 500, ok, 500.
    for (let i = 0; i < 4; i++) {
      await t.request('POST', '/api/v1/events', { token: admin, body: { event_type: 'hooked.e' } });
      expect(await eventually(async () => rx.requests.length === i + 1)).toBe(true);
    }
    const list = async () => (await get('/api/v1/events/subscriptions')).subscriptions[0];
    expect(await eventually(async () => (await list()).events_failed === 2)).toBe(true);
    const s = await list();
    expect(s).toMatchObject({ events_delivered: 2, events_failed: 2, success_rate: 0.5 });
    const h = await get('/api/v1/events/health');
    expect(h.metrics.error_rate).toBe(0.5);
    expect(h.metrics.queue_size).toBe(0);
    expect(h.metrics.delivery_latency_ms).toBeGreaterThanOrEqual(30);
    const check = h.checks.find((c: any) => c.name === 'delivery_errors');
    expect(check).toMatchObject({ status: 'warning', details: { attempts_last_hour: 4, error_rate: 0.5 } });
    expect(h.status).toBe('warning');
    const dispatcher = (await get('/api/v1/services/webhook_dispatcher')).metrics;
    expect(dispatcher).toMatchObject({ attempts: 4, failed_attempts: 2, error_rate: 0.5, in_flight: 0 });
    expect(dispatcher.avg_response_time_ms).toBeGreaterThanOrEqual(30);
    expect(dispatcher.p99_latency_ms).toBeGreaterThanOrEqual(dispatcher.avg_response_time_ms);
  });
});
