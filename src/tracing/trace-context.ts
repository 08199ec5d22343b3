import { randomFillSync } from 'node:crypto';

/** A W3C trace context (https://www.w3.org/TR/trace-context/): the trace, the parent span, the flags. */
export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero: the span the next hop's spans are children of. */
  spanId: string;
  /** 2 hex digits; `01` is "sampled". */
  flags: string;
}

// Version 00 is exactly 55 characters; a later version may append fields after a dash (the spec's rule: read
// the first four, ignore the rest). Version ff is invalid.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The context of a `traceparent` header, or undefined when it is absent or invalid (then a new trace begins). */
export function parseTraceparent(header: string | undefined): TraceContext | undefined {
  if (header === undefined || header.length < 55 || header.length > 512) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, flags };
}

export const formatTraceparent = (c: TraceContext): string => `00-${c.traceId}-${c.spanId}-${c.flags}`;

// tracestate: at most 32 comma-separated list members of printable ASCII (spec §3.3); kept as sent, or dropped
// whole when it is not of that form (the spec allows dropping it).
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** The `tracestate` header worth keeping: only with a valid `traceparent`, at most 512 printable characters. */
export function keptTracestate(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (!TRACESTATE.test(value) || value.split(',').length > 32) return undefined;
  return value;
}

// Ids come from one buffer of random bytes refilled when used up: a refill of 4 KiB costs about what
// `randomBytes(8)` costs once, so an id costs a slice of hex rather than a call into OpenSSL.
const pool = Buffer.allocUnsafe(4096);
let taken = pool.length;

function randomHex(bytes: number, zero: string): string {
  for (;;) {
    if (taken + bytes > pool.length) {
      randomFillSync(pool);
      taken = 0;
    }
    const hex = pool.toString('hex', taken, taken + bytes);
    taken += bytes;
    if (hex !== zero) return hex;
  }
}

export const newSpanId = (): string => randomHex(8, ZERO_SPAN);
export const newTraceId = (): string => randomHex(16, ZERO_TRACE);
