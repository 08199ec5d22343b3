import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { HubBatch } from './hub-batch.js';
import type { HubEvent } from './hub-event.js';
import { CONGESTED_BYTES, type StreamEnd, type StreamSink } from './stream-sink.js';
import { TickCork } from './tick-cork.js';

const DRAIN_POLL_MS = 20;
// Events stop being written to a client at CONGESTED_BYTES (they wait in its queue, or in the store), so only
// answers to its own messages take its buffer far past that: a client that sends without reading them.
const HOLD_READING_BYTES = 16 * CONGESTED_BYTES;

/** WebSocket messages: `{message_type: 'event', event}`, `checkpoint`, and protocol-level pings. */
export class WsSink implements StreamSink {
  readonly kind = 'websocket' as const;
  private awaitingPong = false;
  /** Whether the client's messages went unread (see holdReading) since the last protocol ping. */
  private heldSincePing = false;
  private readonly cork: TickCork;

  constructor(private readonly socket: WebSocket) {
    // ws keeps its net.Socket private; without it (a test double) writes simply go out one by one.
    this.cork = new TickCork(() => (socket as unknown as { _socket?: Socket })._socket);
    socket.on('pong', () => {
      this.awaitingPong = false;
    });
  }

  get closed(): boolean {
    return this.socket.readyState !== this.socket.OPEN;
  }

  /** Sends any JSON message of the protocol. */
  message(body: Record<string, unknown>): void {
    if (!this.closed) this.socket.send(JSON.stringify(body));
  }

  send(event: HubEvent): boolean {
    if (this.closed) return true;
    this.cork.hold();
    this.socket.send(event.wsFrame());
    return !this.congested();
  }

  sendBatch(batch: HubBatch): boolean {
    if (this.closed) return true;
    // The batch's bytes are whole text frames; they go straight to the socket unless ws itself still holds
    // frames of its own to write first (it queues them only while compressing, which is off, or reading a
    // Blob), which keeps every frame in order.
    const raw = (this.socket as unknown as { _socket?: Socket })._socket;
    const sender = (this.socket as unknown as { _sender?: { _queue?: unknown[] } })._sender;
    if (!raw || sender?._queue === undefined || sender._queue.length > 0) {
      for (const event of batch.events) this.send(event);
      return !this.congested();
    }
    raw.write(batch.wsBytes());
    return !this.congested();
  }

  checkpoint(eventId: string): void {
    this.message({ message_type: 'checkpoint', last_event_id: eventId });
  }

  /**
   * Once answers to the client's messages fill its buffer far past congestion, stops reading what it sends (TCP
   * pushes back on it) until the buffer has drained: a client that sends messages without reading the answers
   * cannot make the server hold them without bound. A client merely slow with its events is still heard (an
   * `unsubscribe` may be what it needs).
   */
  async holdReading(): Promise<void> {
    if (this.closed || this.socket.bufferedAmount <= HOLD_READING_BYTES) return;
    this.heldSincePing = true;
    this.socket.pause();
    try {
      await this.waitDrain();
    } finally {
      this.socket.resume();
    }
  }

  /** A protocol ping; a peer that did not answer the previous one is dead and is cut off. */
  ping(): void {
    if (this.closed) return;
    // An answer may be waiting unread behind messages that were held back: that peer gets one more ping.
    if (this.awaitingPong && !this.heldSincePing) {
      this.socket.terminate();
      return;
    }
    this.heldSincePing = false;
    this.awaitingPong = true;
    this.socket.ping();
  }

  congested(): boolean {
    return !this.closed && this.socket.bufferedAmount > CONGESTED_BYTES;
  }

  bufferedBytes(): number {
    return this.closed ? 0 : this.socket.bufferedAmount;
  }

  waitDrain(): Promise<void> {
    // ws has no drain event of its own; its buffered amount is polled until it falls or the socket closes.
    return new Promise((resolve) => {
      const check = () => {
        if (!this.congested()) resolve();
        else setTimeout(check, DRAIN_POLL_MS).unref();
      };
      check();
    });
  }

  end(final?: StreamEnd): void {
    if (this.closed) return;
    if (final) this.message({ message_type: final.reason, ...final });
    this.socket.close(final?.reason === 'overflow' ? 4008 : 1001, final?.reason ?? 'closed');
    const timer = setTimeout(() => this.socket.terminate(), final?.reason === 'overflow' ? 15_000 : 1000);
    timer.unref();
    this.socket.once('close', () => clearTimeout(timer));
  }
}
