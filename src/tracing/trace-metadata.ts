/**
 * The trace context of a stored event as its readers see it in `metadata` (the event's detail and list, stream
 * messages): `trace_id`, `traceparent`, and `tracestate` when the emitter sent one.
 */
export function traceMetadata(
  traceparent: string,
  tracestate: string | null,
): { trace_id: string; traceparent: string; tracestate?: string } {
  const trace = { trace_id: traceparent.slice(3, 35), traceparent };
  return tracestate === null ? trace : { ...trace, tracestate };
}
