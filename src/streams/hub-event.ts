import type { EventCipher } from '../events/event-cipher.js';
import { decodeEventData } from '../events/event-data.js';
import type { EventsTable } from '../events/event-tables.js';
import { traceMetadata } from '../tracing/trace-metadata.js';

/**
 * A committed event on its way to live connections. Its data is decoded and its frames serialised once,
 * on first use, however many connections receive it.
 */
export class HubEvent {
  readonly sequence: number;
  private decoded: Record<string, unknown> | undefined;
  private sse: string | undefined;
  private ws: string | undefined;

  /** When the hub took it (performance.now()), for the time it waits for its flush. */
  readonly takenAt = performance.now();

  constructor(
    readonly row: EventsTable,
    private readonly cipher: EventCipher,
  ) {
    this.sequence = Number(row.sequence);
  }

  get id(): string {
    return this.row.event_id;
  }

  data(): Record<string, unknown> {
    this.decoded ??= decodeEventData(this.row, this.cipher);
    return this.decoded;
  }

  /** The JSON of a stream event: §4.3 plus `sequence`, and `metadata` with its trace context (docs/tracing.md). */
  payload() {
    const r = this.row;
    return {
      event_id: r.event_id,
      event_type: r.event_type,
      source: r.source,
      timestamp: r.timestamp,
      priority: r.priority,
      data: this.data(),
      sequence: this.sequence,
      ...(r.traceparent === null ? {} : { metadata: traceMetadata(r.traceparent, r.tracestate) }),
    };
  }

  sseFrame(): string {
    this.sse ??= `id: ${this.row.event_id}\nevent: ${this.row.event_type}\ndata: ${JSON.stringify(this.payload())}\n\n`;
    return this.sse;
  }

  wsFrame(): string {
    this.ws ??= JSON.stringify({ message_type: 'event', event: this.payload() });
    return this.ws;
  }
}
