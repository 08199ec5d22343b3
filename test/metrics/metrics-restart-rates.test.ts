import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MetricsCollector } from '../../src/metrics/metrics-collector.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('metric rates across a restart of the collector', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('divides the responses of an interval by the whole interval, also when the collector restarted in it', async () => {
    const collector = t.platform.context.registry.get('metrics_collector') as MetricsCollector;
    await collector.sampleNow();
    const since = Date.now();
    for (let i = 0; i < 20; i++) await t.request('GET', '/api/v1/services', { token: admin });
    await new Promise((r) => setTimeout(r, 400));
    const restart = await t.request('POST', '/api/v1/services/metrics_collector/restart', { token: admin });
    expect(restart.statusCode).toBe(200);
    const values = await collector.sampleNow();
    const elapsed = (Date.now() - since) / 1000;
    expect(values.request_count).toBeGreaterThanOrEqual(21);
    // The seconds the rate was computed over: the interval since the previous sample, not since the restart.
    const seconds = values.request_count! / values.requests_per_second!;
    expect(seconds).toBeGreaterThan(elapsed * 0.9);
    expect(seconds).toBeLessThan(elapsed * 1.1 + 0.05);
  });
});
