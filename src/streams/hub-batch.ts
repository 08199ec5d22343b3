import * as ws from 'ws';
import type { HubEvent } from './hub-event.js';

// ws frames data with `Sender.frame` (exported by its ES module, absent from its type declarations).
interface WsSender {
  frame(
    data: Buffer,
    options: { fin: boolean; rsv1: boolean; opcode: number; mask: boolean; readOnly: boolean },
  ): Buffer[];
}
const Sender = (ws as unknown as { Sender: WsSender }).Sender;
const CRLF = Buffer.from('\r\n');
const TEXT = { fin: true, rsv1: false, opcode: 1, mask: false, readOnly: false };

/**
 * Events the hub hands to every connection that selects the same ones, with the bytes of each transport built
 * once: the SSE frames one after the other, and the WebSocket messages as consecutive unmasked text frames
 * (what a server sends, identical for every client). A thousand clients then cost a thousand writes of one
 * shared buffer, not a thousand framings of each event.
 */
export class HubBatch {
  private sse: Buffer | undefined;
  private sseChunked: Buffer | undefined;
  private ws: Buffer | undefined;

  constructor(
    readonly events: readonly HubEvent[],
    /** The selection the events were matched against (`StreamConnection.audienceKey`). */
    readonly audienceKey: string,
  ) {}

  get last(): HubEvent {
    return this.events[this.events.length - 1]!;
  }

  sseBytes(): Buffer {
    this.sse ??= Buffer.from(this.events.map((e) => e.sseFrame()).join(''));
    return this.sse;
  }

  /** The SSE frames as one HTTP/1.1 chunk (`size CRLF data CRLF`), for a response in chunked encoding. */
  sseChunk(): Buffer {
    if (!this.sseChunked) {
      const data = this.sseBytes();
      this.sseChunked = Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, CRLF]);
    }
    return this.sseChunked;
  }

  wsBytes(): Buffer {
    this.ws ??= Buffer.concat(this.events.flatMap((e) => Sender.frame(Buffer.from(e.wsFrame()), TEXT)));
    return this.ws;
  }
}
