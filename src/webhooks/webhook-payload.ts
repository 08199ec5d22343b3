/** A stored event as delivery needs it: its facts, and `data` as JSON text (decrypted when kept encrypted). */
export interface DeliverableEvent {
  event_id: string;
  event_type: string;
  source: string;
  timestamp: string;
  priority: number;
  sequence: number;
  dataJson: string;
  correlation_id: string;
  expires_at: string | null;
  /** The trace it was emitted in (docs/tracing.md): sent as headers, not in the body. */
  traceparent: string | null;
  tracestate: string | null;
}

/** The body of one delivery (decisions §4), as plugin subscribers receive it parsed. */
export interface WebhookEventPayload {
  event_id: string;
  event_type: string;
  source: string;
  timestamp: string;
  priority: number;
  sequence: number;
  data: Record<string, unknown>;
  /** Plugin subscribers also find `traceparent` (and `tracestate`) here: the span of their call. */
  metadata: { correlation_id: string; traceparent?: string; tracestate?: string };
  subscription_id: string;
  attempt: number;
  /** Only inside a batch: the delivery the entry belongs to. */
  delivery_id?: string;
}

/**
 * The JSON text of one delivery. `data` is spliced in as the stored JSON text instead of being parsed and
 * serialised again for every subscription and attempt; the rest is serialised field by field.
 */
export function eventJson(
  e: DeliverableEvent,
  subscriptionId: string,
  attempt: number,
  deliveryId?: string,
): string {
  const s = JSON.stringify;
  return (
    `{"event_id":${s(e.event_id)},"event_type":${s(e.event_type)},"source":${s(e.source)},` +
    `"timestamp":${s(e.timestamp)},"priority":${e.priority},"sequence":${e.sequence},` +
    `"data":${e.dataJson},"metadata":{"correlation_id":${s(e.correlation_id)}},` +
    `"subscription_id":${s(subscriptionId)},"attempt":${attempt}` +
    (deliveryId === undefined ? '}' : `,"delivery_id":${s(deliveryId)}}`)
  );
}

/** A batch: `{batch_id, subscription_id, events: [...]}`, each entry a delivery body with its `delivery_id`. */
export function batchJson(batchId: string, subscriptionId: string, entries: readonly string[]): string {
  return `{"batch_id":${JSON.stringify(batchId)},"subscription_id":${JSON.stringify(subscriptionId)},"events":[${entries.join(',')}]}`;
}
