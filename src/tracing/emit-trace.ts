import type { EventsTable } from '../events/event-tables.js';
import type { EventOrigin } from '../kernel/platform-events.js';
import { keptTracestate, parseTraceparent } from './trace-context.js';
import type { Tracing } from './tracing.js';

/** The trace context an emitted event is stored with, and the spans of its emit and commit. */
export interface EmitTrace {
  /** Stored with the event: its deliveries, plugin calls and stream messages descend from this span. */
  traceparent: string;
  tracestate: string | null;
  /** Ends the spans when the write settles; answers the same promise. */
  follow(write: Promise<EventsTable>): Promise<EventsTable>;
}

/**
 * Begins the trace of an emit: under the caller's `traceparent` (a new trace when it has none or an invalid
 * one), an `event.emit` span, and when spans are recorded an `event.commit` span under it, from the hand-over
 * to the writer until the event's batch committed. The stored `traceparent` names the last of them.
 */
export function beginEmitTrace(
  tracing: Tracing,
  origin: Pick<EventOrigin, 'traceparent' | 'tracestate'>,
  event: { event_id: string; event_type: string; source: string },
): EmitTrace {
  const parent = origin.traceparent;
  // A tracestate belongs to its traceparent: without a valid one it is dropped (W3C trace context §3.3).
  const kept = (valid: boolean) =>
    valid && origin.tracestate !== undefined ? (keptTracestate(origin.tracestate) ?? null) : null;
  if (!tracing.recording) {
    const { traceparent } = tracing.start('event.emit', parent);
    // The caller's trace goes on only when its traceparent was valid (else a new trace id was drawn).
    const continued = parent?.includes(traceparent.slice(3, 35)) === true;
    return { traceparent, tracestate: kept(continued), follow: sameWrite };
  }
  const tracestate = kept(parent !== undefined && parseTraceparent(parent) !== undefined);
  const attributes = {
    'platform.event.id': event.event_id,
    'platform.event.type': event.event_type,
    'platform.event.source': event.source,
  };
  const emit = tracing.start('event.emit', parent, { kind: 'producer', attributes, tracestate });
  const commit = tracing.start('event.commit', emit.traceparent, { attributes, tracestate });
  return {
    traceparent: commit.traceparent,
    tracestate,
    follow: (write) =>
      write.then(
        (row) => {
          const done = { 'platform.event.sequence': Number(row.sequence) };
          commit.end(done);
          emit.end(done);
          return row;
        },
        (err: unknown) => {
          const message = err instanceof Error ? err.message : String(err);
          commit.end(undefined, message);
          emit.end(undefined, message);
          throw err;
        },
      ),
  };
}

const sameWrite = (write: Promise<EventsTable>) => write;
