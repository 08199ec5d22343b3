import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MetricsCollector } from '../../src/metrics/metrics-collector.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const collectorOf = (t: TestPlatform) =>
  t.platform.context.registry.get('metrics_collector') as MetricsCollector;

type Point = { timestamp: string; value: number };

/**
 * The series of GET /api/v1/metrics checked against a known workload: intervals of very different sizes land
 * in one bucket, and the per-response figures of the bucket must be those of its responses.
 */
describe('metric series from a known workload', () => {
  let t: TestPlatform;
  let admin: string;
  const samples: Record<string, number>[] = [];

  beforeAll(async () => {
    // The timer never fires during the test: every sample is taken with sampleNow() at a known point.
    t = await startPlatform({ metrics: { sample_interval_seconds: 3600 } });
    admin = await t.adminToken();
    // The first interval since start: the login, and three emitted events.
    for (let i = 0; i < 3; i++) {
      const res = await t.request('POST', '/api/v1/events', {
        token: admin,
        body: { event_type: 'series.e' },
      });
      expect(res.statusCode).toBe(201);
    }
    samples.push(await collectorOf(t).sampleNow());
    // One response, and it is an error.
    await t.request('GET', '/api/v1/no-such-route', { token: admin });
    samples.push(await collectorOf(t).sampleNow());
    // 29 good responses.
    for (let i = 0; i < 29; i++) await t.request('GET', '/api/v1/health');
    samples.push(await collectorOf(t).sampleNow());
  });
  afterAll(async () => {
    await t.close();
  });

  const series = async (names: string) => {
    const res = await t.request('GET', `/api/v1/metrics?metrics=${names}&resolution=1d`, { token: admin });
    expect(res.statusCode).toBe(200);
    return res.data.data.metrics as Record<string, Point[]>;
  };

  it('samples the intervals as they happened', () => {
    expect(samples.map((s) => s['request_count'])).toEqual([4, 1, 29]);
    expect(samples.map((s) => s['error_count'])).toEqual([0, 1, 0]);
    expect(samples.map((s) => s['error_rate'])).toEqual([0, 1, 0]);
  });

  it('gives each bucket the error rate of its responses, not the mean of its samples', async () => {
    const m = await series('error_rate,error_count,request_count');
    expect(m['request_count']!.length).toBeGreaterThan(0);
    for (const point of m['error_rate']!) {
      const count = m['request_count']!.find((p) => p.timestamp === point.timestamp)!.value;
      const errors = m['error_count']!.find((p) => p.timestamp === point.timestamp)!.value;
      expect(point.value).toBeCloseTo(errors / count, 3);
    }
    const total = (name: string) => m[name]!.reduce((a, p) => a + p.value, 0);
    expect(total('request_count')).toBe(34);
    expect(total('error_count')).toBe(1);
  });

  it('gives each bucket the mean response time of its responses', async () => {
    const m = await series('response_time_ms,request_count');
    const count = samples.reduce((a, s) => a + s['request_count']!, 0);
    const sumMs = samples.reduce((a, s) => a + s['response_time_ms']! * s['request_count']!, 0);
    // The three samples share one daily bucket, or two when the test ran across midnight UTC: either way each
    // bucket's mean, weighted by its responses, adds up to the time of all of them (the mean of the samples
    // would not: they hold 4, 1 and 29 responses).
    expect(m['response_time_ms']).toHaveLength(m['request_count']!.length);
    const weighted = m['response_time_ms']!.reduce(
      (a, p) => a + p.value * m['request_count']!.find((q) => q.timestamp === p.timestamp)!.value,
      0,
    );
    expect(weighted / count).toBeCloseTo(sumMs / count, 2);
  });

  it('has an events_per_second point for the first interval, which saw events', async () => {
    expect(samples[0]!['events_per_second']).toBeGreaterThan(0);
    const m = await series('events_per_second');
    expect(m['events_per_second']!.length).toBeGreaterThan(0);
  });
});
