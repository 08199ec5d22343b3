import type { PlatformConfig } from '../config/config-schema.js';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent } from './trace-context.js';
import type { TracingService } from './tracing-service.js';

export type SpanKind = 'internal' | 'producer' | 'consumer' | 'client';
export type SpanAttributes = Record<string, string | number | boolean>;

/** A span begun by `Tracing.start`: the context to hand on, and its end. */
export interface SpanHandle {
  /** `00-<trace id>-<this span's id>-<flags>`: what the next hop names as its parent. */
  readonly traceparent: string;
  /** Ends the span; `error` marks it failed. A second call does nothing. */
  end(attributes?: SpanAttributes, error?: string): void;
}

/**
 * Trace context for the path of an event (docs/tracing.md). Off (the default), spans are not recorded: a span
 * is only a new span id under its parent, so the trace still reaches webhook receivers, plugins and streams.
 * With `tracing.otlp_endpoint` set, spans are recorded and exported over OTLP/HTTP.
 */
export interface Tracing {
  readonly recording: boolean;
  /**
   * Begins a span under `parent` (a `traceparent`; none or an invalid one begins a new trace). `tracestate` is
   * the parent's, kept with it.
   */
  start(
    name: string,
    parent: string | null | undefined,
    options?: { kind?: SpanKind; attributes?: SpanAttributes; tracestate?: string | null | undefined },
  ): SpanHandle;
  /** Exports what is pending and stops (at shutdown). */
  close(): Promise<void>;
}

const ENDED: SpanHandle['end'] = () => {};

/**
 * Tracing that records nothing. Its cost per span is a parse of the parent and a new span id from a pool of
 * random bytes (trace-context.ts): no allocation beyond the header text.
 */
export const offTracing: Tracing = {
  recording: false,
  start(_name, parent) {
    const context = parent ? parseTraceparent(parent) : undefined;
    const traceparent = formatTraceparent(
      context
        ? { traceId: context.traceId, spanId: newSpanId(), flags: context.flags }
        : // Sampled: a receiver that samples by its parent records the trace this begins.
          { traceId: newTraceId(), spanId: newSpanId(), flags: '01' },
    );
    return { traceparent, end: ENDED };
  },
  close: async () => {},
};

/**
 * The tracing the configuration asks for: off without `tracing.otlp_endpoint`; else the OpenTelemetry SDK,
 * loaded only then (start-up time and memory stay as they were when tracing is off).
 */
export async function createTracing(
  config: PlatformConfig['tracing'],
  version: string,
  watch?: TracingService,
): Promise<Tracing> {
  if (config.otlp_endpoint === '') return offTracing;
  const { OtlpTracing } = await import('./otlp-tracing.js');
  return OtlpTracing.create(config, version, watch);
}
