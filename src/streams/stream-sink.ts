import type { HubBatch } from './hub-batch.js';
import type { HubEvent } from './hub-event.js';

/** Above this many queued bytes a client counts as congested (a stream's usual high-water mark), either transport. */
export const CONGESTED_BYTES = 64 * 1024;

/** Why a stream ended, sent as its last message when the server ends it. */
export interface StreamEnd {
  reason: 'overflow' | 'shutdown' | 'credentials_revoked';
  message: string;
  last_event_id: string | null;
}

/** The transport under a live connection: an SSE response or a WebSocket. */
export interface StreamSink {
  readonly kind: 'sse' | 'websocket';
  /** Writes an event; false when the transport's buffer is full (the write is still queued in it). */
  send(event: HubEvent): boolean;
  /** Writes every event of a batch, in order; false as for `send`. */
  sendBatch(batch: HubBatch): boolean;
  /** Moves the client's resume point without an event (filtered streams). */
  checkpoint(eventId: string): void;
  ping(): void;
  /** True while the transport's buffer is above its high-water mark. */
  congested(): boolean;
  /** Resolves when the buffer has drained, or the transport closed. */
  waitDrain(): Promise<void>;
  end(final?: StreamEnd): void;
  readonly closed: boolean;
  /** Bytes waiting in the transport's buffer. */
  bufferedBytes(): number;
}
