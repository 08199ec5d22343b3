/**
 * Stream clients for the fan-out benchmark that cost the load process as little as the protocols allow, so
 * one process can read a thousand WebSocket and a thousand SSE connections at a thousand events a second.
 *
 * Each reader speaks its protocol in full — the WebSocket opening handshake, frame lengths, pings answered
 * with pongs; SSE over Node's own HTTP client (chunked decoding in its C++ parser) — and counts every event
 * frame it receives. A sampled reader also takes the `sent_at` the emitter put in each event's data, for the
 * latency from emit to receipt; the others only count (parsing two million JSON bodies a second would make
 * the client, not the server, the thing measured).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';

export type Sample = (sentAt: number) => void;

export interface StreamReader {
  /** Event frames received so far. */
  readonly received: number;
  close(): void;
}

const SENT_AT = Buffer.from('"sent_at":');
const SSE_EVENT = Buffer.from('\ndata: ');
const SSE_END = Buffer.from('\n\n');

/** The number after `"sent_at":` between `from` and `to`, or undefined. */
function sentAtIn(buf: Buffer, from: number, to: number): number | undefined {
  const at = buf.indexOf(SENT_AT, from);
  if (at === -1 || at >= to) return undefined;
  let end = at + SENT_AT.length;
  while (end < to) {
    const c = buf[end]!;
    if ((c < 48 || c > 57) && c !== 46) break;
    end += 1;
  }
  const value = Number(buf.toString('latin1', at + SENT_AT.length, end));
  return Number.isFinite(value) ? value : undefined;
}

/** A WebSocket client: handshake through Node's HTTP client, then server frames read off the socket. */
export function openWsReader(url: string, sample: Sample | undefined): Promise<StreamReader> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => reject(new Error(`no upgrade: HTTP ${res.statusCode}`)));
    req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
      socket.setNoDelay(true);
      let received = 0;
      let carry: Buffer | undefined = head.length > 0 ? head : undefined;
      const read = (chunk: Buffer) => {
        const buf = carry ? Buffer.concat([carry, chunk]) : chunk;
        carry = undefined;
        let offset = 0;
        while (buf.length - offset >= 2) {
          const opcode = buf[offset]! & 0x0f;
          let length = buf[offset + 1]! & 0x7f;
          let header = 2;
          if (length === 126) {
            if (buf.length - offset < 4) break;
            length = buf.readUInt16BE(offset + 2);
            header = 4;
          } else if (length === 127) {
            if (buf.length - offset < 10) break;
            length = Number(buf.readBigUInt64BE(offset + 2));
            header = 10;
          }
          const start = offset + header;
          const end = start + length;
          if (end > buf.length) break;
          if (opcode === 1) {
            received += 1;
            if (sample) {
              const sentAt = sentAtIn(buf, start, end);
              if (sentAt !== undefined) sample(sentAt);
              else received -= 1; // a protocol message (subscribed, checkpoint), not an event
            }
          } else if (opcode === 9) socket.write(pong(buf.subarray(start, end)));
          offset = end;
        }
        if (offset < buf.length) carry = buf.subarray(offset);
      };
      if (carry) {
        const first = carry;
        carry = undefined;
        read(first);
      }
      socket.on('data', read);
      socket.on('error', () => {});
      resolve({
        get received() {
          return received;
        },
        close: () => socket.destroy(),
      });
    });
    req.end();
  });
}

/** A masked client pong (payloads of pings are under 126 bytes). */
function pong(payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const frame = Buffer.alloc(6 + payload.length);
  frame[0] = 0x8a;
  frame[1] = 0x80 | payload.length;
  mask.copy(frame, 2);
  for (let i = 0; i < payload.length; i++) frame[6 + i] = payload[i]! ^ mask[i % 4]!;
  return frame;
}

/** An SSE client: complete frames (up to the last blank line of what arrived) are read, the rest carried. */
export function openSseReader(
  url: string,
  token: string,
  agent: http.Agent,
  sample: Sample | undefined,
): Promise<StreamReader> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`HTTP ${res.statusCode}`));
        return;
      }
      let received = 0;
      let carry: Buffer | undefined;
      res.on('data', (chunk: Buffer) => {
        const buf = carry ? Buffer.concat([carry, chunk]) : chunk;
        carry = undefined;
        const complete = buf.lastIndexOf(SSE_END) + SSE_END.length;
        if (complete < buf.length) carry = buf.subarray(Math.max(complete, 0));
        let at = buf.indexOf(SSE_EVENT);
        while (at !== -1 && at < complete) {
          const next = buf.indexOf(SSE_EVENT, at + SSE_EVENT.length);
          const frameEnd = next === -1 || next > complete ? complete : next;
          if (sample) {
            const sentAt = sentAtIn(buf, at, frameEnd);
            if (sentAt !== undefined) {
              received += 1;
              sample(sentAt);
            }
          } else received += 1;
          at = next;
        }
      });
      res.on('error', () => {});
      resolve({
        get received() {
          return received;
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}
