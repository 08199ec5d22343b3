import type { ServerResponse } from 'node:http';
import type { HubBatch } from './hub-batch.js';
import type { HubEvent } from './hub-event.js';
import { CONGESTED_BYTES, type StreamEnd, type StreamSink } from './stream-sink.js';
import { TickCork } from './tick-cork.js';

// How long a client that is not reading gets to take its final message before it is cut off: long enough
// for a stalled reader to learn its resume point, short on shutdown so closing is not held up.
const END_GRACE_MS = { overflow: 15_000, shutdown: 1000, credentials_revoked: 1000, none: 1000 } as const;

/** Server-sent events over a hijacked response: `id:`/`event:`/`data:` frames, `: ping` comments. */
export class SseSink implements StreamSink {
  readonly kind = 'sse' as const;
  private done = false;
  private readonly cork: TickCork;

  constructor(private readonly res: ServerResponse) {
    this.cork = new TickCork(() => res.socket);
    res.on('close', () => {
      this.done = true;
    });
  }

  get closed(): boolean {
    return this.done || this.res.destroyed;
  }

  send(event: HubEvent): boolean {
    if (this.closed) return true;
    this.cork.hold();
    return this.res.write(event.sseFrame());
  }

  sendBatch(batch: HubBatch): boolean {
    if (this.closed) return true;
    const socket = this.res.socket;
    // With nothing of its own waiting in the response, the batch goes straight to the socket as one ready-made
    // HTTP chunk shared by every client: one plain write instead of Node's corked chunk header, data and end
    // (half the cost per client). Otherwise, and without chunked encoding (HTTP/1.0), through the response.
    if (!socket || !this.res.chunkedEncoding || this.res.writableLength !== socket.writableLength) {
      return this.res.write(batch.sseBytes());
    }
    socket.write(batch.sseChunk());
    return !this.congested();
  }

  checkpoint(eventId: string): void {
    if (!this.closed) this.res.write(`id: ${eventId}\n\n`);
  }

  ping(): void {
    if (!this.closed) this.res.write(': ping\n\n');
  }

  congested(): boolean {
    return !this.closed && (this.res.writableNeedDrain || this.res.writableLength > CONGESTED_BYTES);
  }

  bufferedBytes(): number {
    return this.closed ? 0 : this.res.writableLength;
  }

  waitDrain(): Promise<void> {
    if (!this.congested()) return Promise.resolve();
    // The response says `drain` after its own writes filled the socket, the socket after shared chunks did.
    const socket = this.res.socket;
    return new Promise((resolve) => {
      const finish = () => {
        this.res.off('drain', finish);
        this.res.off('close', finish);
        socket?.off('drain', finish);
        resolve();
      };
      this.res.on('drain', finish);
      this.res.on('close', finish);
      socket?.on('drain', finish);
    });
  }

  end(final?: StreamEnd): void {
    if (this.closed) return;
    this.done = true;
    if (final) this.res.write(`event: ${final.reason}\ndata: ${JSON.stringify(final)}\n\n`);
    this.res.end();
    const timer = setTimeout(() => this.res.destroy(), END_GRACE_MS[final?.reason ?? 'none']);
    timer.unref();
    this.res.once('close', () => clearTimeout(timer));
  }
}
