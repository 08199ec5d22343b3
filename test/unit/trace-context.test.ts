import { describe, expect, it } from 'vitest';
import { tracesUrl } from '../../src/tracing/otlp-tracing.js';
import { keptTracestate, newSpanId, newTraceId, parseTraceparent } from '../../src/tracing/trace-context.js';
import { offTracing } from '../../src/tracing/tracing.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('W3C trace context', () => {
  it('reads a valid traceparent, and a later version by its first four fields', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: '01' });
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-00-more`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      flags: '00',
    });
  });

  it('refuses what the spec calls invalid, so that a new trace begins', () => {
    for (const bad of [
      undefined,
      '',
      `ff-${TRACE}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-1`,
      `00_${TRACE}_${SPAN}_01`,
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
  });

  it('keeps a tracestate of printable text with at most 32 members, drops any other', () => {
    expect(keptTracestate(' vendor=abc,other=1 ')).toBe('vendor=abc,other=1');
    expect(keptTracestate('a=1\n')).toBe('a=1');
    expect(keptTracestate('a=\u00e9')).toBeUndefined();
    expect(keptTracestate(Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','))).toBeUndefined();
    expect(keptTracestate('x'.repeat(513))).toBeUndefined();
  });

  it('draws distinct, non-zero ids of the right length', () => {
    const spans = new Set(Array.from({ length: 2000 }, newSpanId));
    expect(spans.size).toBe(2000);
    for (const id of spans) expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(newTraceId()).toMatch(/^[0-9a-f]{32}$/);
  });

  it('off, a span is a new span id under its parent, or the root of a new sampled trace', () => {
    const child = offTracing.start('x', `00-${TRACE}-${SPAN}-00`).traceparent;
    expect(child).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-00$`));
    expect(child).not.toContain(SPAN);
    expect(offTracing.start('x', 'garbage').traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(offTracing.start('x', undefined).traceparent).not.toContain(TRACE);
  });

  it('adds the standard OTLP path to an endpoint without one', () => {
    expect(tracesUrl('http://127.0.0.1:4318')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(tracesUrl('http://127.0.0.1:4318/')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(tracesUrl('https://collector.example/otlp/v1/traces')).toBe(
      'https://collector.example/otlp/v1/traces',
    );
  });
});
