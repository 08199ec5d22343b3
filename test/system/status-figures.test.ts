import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** The figures of GET /api/v1/status and GET /api/v1/admin/system/health against what really happened. */
describe('status and system health figures', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('counts the responses of its first minute as they were, without scaling seconds up to a minute', async () => {
    // The platform started moments ago: every response it sent is one of the last minute.
    for (let i = 0; i < 10; i++) await t.request('GET', '/api/v1/health');
    const summary = await t.request('GET', '/api/v1/metrics/summary', { token: admin });
    const sent = (summary.data.data.requests.total as number) + 1; // the summary's own response
    const res = await t.request('GET', '/api/v1/admin/system/health', { token: admin });
    expect(res.statusCode).toBe(200);
    const m = res.data.data.metrics;
    expect(m.window_seconds).toBeLessThan(60);
    expect(m.requests_per_minute).toBe(sent);
    expect(m.error_rate).toBe(0);
    expect(m.average_response_time).toBeGreaterThan(0);
  });

  it('shows each component in /status with figures of one moment, the latest', async () => {
    // A health check of every service, kept by the registry for a second.
    expect((await t.request('GET', '/api/v1/components/health', { token: admin })).statusCode).toBe(200);
    let newest = '';
    for (let i = 0; i < 3; i++) {
      const res = await t.request('POST', '/api/v1/events', {
        token: admin,
        body: { event_type: 'status.e' },
      });
      newest = res.data.data.event.event_id;
    }
    // Nothing else emits here (the login's auth.login is stored before the first test): this one is the last.
    const last = (await t.request('GET', `/api/v1/events/${newest}`, { token: admin })).data.data.event
      .sequence as number;
    // The stream hub takes committed events just after the emit answers.
    expect(
      await eventually(async () => {
        const h = await t.request('GET', '/api/v1/events/health', { token: admin });
        const hub = h.data.data.checks.find((c: { name: string }) => c.name === 'stream_hub');
        return hub.details.last_sequence === last;
      }),
    ).toBe(true);
    const status = await t.request('GET', '/api/v1/status', { token: admin });
    const c = status.data.data.components;
    expect(c.stream_hub.last_sequence).toBe(last);
    expect(c.event_store.last_sequence).toBe(last);
    expect(c.event_bus.processed_events).toBe(last);
    expect(c.cache.hit_rate).toBeCloseTo(c.cache.hits / (c.cache.hits + c.cache.misses), 3);
  });
});
