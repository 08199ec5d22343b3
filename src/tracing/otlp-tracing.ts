import {
  type Context,
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { PlatformConfig } from '../config/config-schema.js';
import { parseTraceparent } from './trace-context.js';
import type { SpanKind as OurKind, SpanHandle, Tracing } from './tracing.js';
import { type TracingService, tracesUrl } from './tracing-service.js';

export { tracesUrl };

const KINDS: Record<OurKind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  client: SpanKind.CLIENT,
};

/**
 * Spans recorded with the OpenTelemetry SDK and exported in batches over OTLP/HTTP (JSON). Imported only when
 * `tracing.otlp_endpoint` is set (tracing.ts). Parents are passed explicitly, as `traceparent` text, so no
 * global context manager or propagator is installed and nothing else in the process is instrumented.
 */
export class OtlpTracing implements Tracing {
  readonly recording = true;

  private constructor(
    private readonly provider: BasicTracerProvider,
    private readonly tracer: Tracer,
  ) {}

  static create(config: PlatformConfig['tracing'], version: string, watch?: TracingService): OtlpTracing {
    const otlp = new OTLPTraceExporter({ url: tracesUrl(config.otlp_endpoint) });
    // Every export's result reaches the tracing component (counted, logged, its health), then the SDK.
    const exporter: SpanExporter = {
      export: (spans, done) =>
        otlp.export(spans, (result) => {
          watch?.exported(result);
          done(result);
        }),
      shutdown: () => otlp.shutdown(),
      forceFlush: () => otlp.forceFlush(),
    };
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({
        [ATTR_SERVICE_NAME]: config.service_name,
        [ATTR_SERVICE_VERSION]: version,
      }),
      // A caller that did not sample its trace (flags 00) is followed: nothing of it is recorded here either.
      sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
      spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.export_interval_ms })],
    });
    return new OtlpTracing(provider, provider.getTracer('platform', version));
  }

  start(
    name: string,
    parent: string | null | undefined,
    options: Parameters<Tracing['start']>[2] = {},
  ): SpanHandle {
    const span = this.tracer.startSpan(
      name,
      { kind: KINDS[options.kind ?? 'internal'], attributes: options.attributes ?? {} },
      parentContext(parent, options.tracestate),
    );
    const c = span.spanContext();
    const traceparent = `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 1) === 1 ? '01' : '00'}`;
    let ended = false;
    return {
      traceparent,
      end(attributes, error) {
        if (ended) return;
        ended = true;
        if (attributes) span.setAttributes(attributes);
        if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
        span.end();
      },
    };
  }

  async close(): Promise<void> {
    await this.provider.shutdown();
  }
}

function parentContext(parent: string | null | undefined, tracestate: string | null | undefined): Context {
  const p = parent ? parseTraceparent(parent) : undefined;
  if (!p) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: p.traceId,
    spanId: p.spanId,
    traceFlags: Number.parseInt(p.flags, 16),
    isRemote: true,
    ...(tracestate ? { traceState: createTraceState(tracestate) } : {}),
  });
}
