import type { WebhookEventPayload } from '../webhooks/webhook-payload.js';
import type { SendOutcome } from '../webhooks/webhook-sender.js';
import type { SpanAttributes, SpanHandle, Tracing } from './tracing.js';

/** What a delivery's trace needs of its event: the context it was stored with (migration 0024). */
export interface TracedEvent {
  event_id: string;
  traceparent: string | null;
  tracestate: string | null;
}

/** The span of one attempt, and the headers that make it the parent of the receiver's spans. */
export interface AttemptTrace {
  headers: Record<string, string>;
  end(outcome: SendOutcome): void;
}

/**
 * One webhook attempt (or one attempt of a batch): a `webhook.attempt` span under the event's stored context,
 * sent as `traceparent` (and the caller's `tracestate`), so the receiver's spans are children of the attempt.
 * A batch whose events belong to different traces gets no header (one header names one trace); its span
 * descends from the first event's.
 */
export function beginAttemptTrace(
  tracing: Tracing,
  events: readonly TracedEvent[],
  delivery: { subscriptionId: string; deliveryId: string; attempt: number },
): AttemptTrace {
  const first = events[0]!;
  const attributes = tracing.recording
    ? {
        'platform.event.id': first.event_id,
        'platform.subscription.id': delivery.subscriptionId,
        'platform.delivery.id': delivery.deliveryId,
        'platform.delivery.attempt': delivery.attempt,
        'platform.delivery.events': events.length,
        'http.request.method': 'POST',
      }
    : undefined;
  const span = tracing.start('webhook.attempt', first.traceparent, {
    kind: 'client',
    attributes,
    tracestate: first.tracestate,
  });
  return {
    headers: events.length === 1 || oneTrace(events) ? traceHeaders(span, first) : {},
    end: ender(span),
  };
}

/**
 * One call of a plugin's event handler: a `plugin.call` span under the event's context; the handler sees it as
 * `event.metadata.traceparent` (and `tracestate`), to continue the trace in what it does.
 */
export function beginPluginCallTrace(
  tracing: Tracing,
  event: TracedEvent,
  payload: WebhookEventPayload,
  delivery: { subscriptionId: string; deliveryId: string; attempt: number },
): { end(outcome: SendOutcome): void } {
  const span = tracing.start('plugin.call', event.traceparent, {
    kind: 'consumer',
    attributes: tracing.recording
      ? {
          'platform.event.id': event.event_id,
          'platform.subscription.id': delivery.subscriptionId,
          'platform.delivery.id': delivery.deliveryId,
          'platform.delivery.attempt': delivery.attempt,
        }
      : undefined,
    tracestate: event.tracestate,
  });
  Object.assign(payload.metadata, traceHeaders(span, event));
  return { end: ender(span) };
}

function traceHeaders(span: SpanHandle, event: TracedEvent): Record<string, string> {
  return event.tracestate === null
    ? { traceparent: span.traceparent }
    : { traceparent: span.traceparent, tracestate: event.tracestate };
}

function oneTrace(events: readonly TracedEvent[]): boolean {
  const trace = events[0]!.traceparent?.slice(3, 35);
  return trace !== undefined && events.every((e) => e.traceparent?.slice(3, 35) === trace);
}

const ender =
  (span: SpanHandle) =>
  (outcome: SendOutcome): void => {
    const attributes: SpanAttributes = { 'platform.delivery.latency_ms': outcome.latencyMs };
    if (outcome.status !== null) attributes['http.response.status_code'] = outcome.status;
    span.end(attributes, outcome.ok ? undefined : (outcome.error ?? `HTTP ${String(outcome.status)}`));
  };
