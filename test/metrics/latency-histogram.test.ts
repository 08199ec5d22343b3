import { describe, expect, it } from 'vitest';
import { LatencyHistogram } from '../../src/metrics/latency-histogram.js';

describe('latency histogram', () => {
  it('reads quantiles within 1 % of the exact nearest-rank value', () => {
    const h = new LatencyHistogram();
    const values = Array.from({ length: 5000 }, (_, i) => 0.05 + i * 0.37);
    for (const v of values) h.record(v);
    const sorted = [...values].sort((a, b) => a - b);
    for (const q of [0.5, 0.9, 0.95, 0.99]) {
      const exact = sorted[Math.ceil(q * sorted.length) - 1]!;
      expect(Math.abs(h.quantile(q) - exact) / exact, `q${q}`).toBeLessThan(0.01);
    }
    expect(h.count).toBe(5000);
    expect(h.sumMs).toBeCloseTo(
      values.reduce((a, b) => a + b, 0),
      6,
    );
    expect(h.maxMs).toBe(sorted.at(-1));
  });

  it('never reports more than the largest value, and 0 when empty', () => {
    const h = new LatencyHistogram();
    expect(h.quantile(0.99)).toBe(0);
    h.record(3);
    expect(h.quantile(0.5)).toBeLessThanOrEqual(3);
    expect(h.quantile(0.5)).toBeGreaterThan(2.95);
    h.record(10 * 60_000 * 3);
    expect(h.quantile(1)).toBe(1_800_000);
  });
});
