import http from 'node:http';
import { WebSocket } from 'ws';

/** One parsed SSE frame: an event (id/event/data), an id-only checkpoint, or a comment. */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
  retry?: string;
}

/**
 * A minimal SSE reader over a raw HTTP request, so tests can see every frame (comments and id-only
 * checkpoints included) and control how fast the client reads.
 */
export class RawSse {
  frames: SseFrame[] = [];
  status = 0;
  headers: http.IncomingHttpHeaders = {};
  body = '';
  ended = false;
  private buffer = '';
  private res: http.IncomingMessage | undefined;
  private req!: http.ClientRequest;
  readonly ready: Promise<void>;

  constructor(url: string, headers: Record<string, string> = {}, options: { paused?: boolean } = {}) {
    this.ready = new Promise((resolve, reject) => {
      this.req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        this.res = res;
        this.status = res.statusCode ?? 0;
        this.headers = res.headers;
        res.setEncoding('utf8');
        if (options.paused) res.pause();
        res.on('data', (chunk: string) => this.take(chunk));
        res.on('end', () => {
          this.ended = true;
        });
        res.on('close', () => {
          this.ended = true;
        });
        resolve();
      });
      this.req.on('error', (err) => {
        this.ended = true;
        reject(err);
      });
    });
  }

  events(): SseFrame[] {
    return this.frames.filter((f) => f.data !== undefined);
  }

  payloads(): any[] {
    return this.events().map((f) => JSON.parse(f.data!));
  }

  resume(): void {
    this.res?.resume();
  }

  pause(): void {
    this.res?.pause();
  }

  close(): void {
    this.req.destroy();
    this.res?.destroy();
  }

  private take(chunk: string): void {
    this.buffer += chunk;
    if (this.status !== 200) {
      this.body += chunk;
      return;
    }
    let cut = this.buffer.indexOf('\n\n');
    while (cut !== -1) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const frame: SseFrame = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) frame.comment = line.slice(1).trim();
        else {
          const i = line.indexOf(':');
          const field = i === -1 ? line : line.slice(0, i);
          const value = i === -1 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'id' || field === 'event' || field === 'retry') frame[field] = value;
          else if (field === 'data')
            frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
        }
      }
      this.frames.push(frame);
      cut = this.buffer.indexOf('\n\n');
    }
  }
}

/** A WebSocket client that collects the server's JSON messages. */
export class WsClient {
  messages: any[] = [];
  readonly socket: WebSocket;
  readonly opened: Promise<void>;
  closeCode: number | undefined;

  constructor(url: string, headers: Record<string, string> = {}) {
    this.socket = new WebSocket(url, { headers });
    this.socket.on('message', (raw) => this.messages.push(JSON.parse(raw.toString())));
    this.socket.on('close', (code) => {
      this.closeCode = code;
    });
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', reject);
      this.socket.once('unexpected-response', (_req, res) =>
        reject(Object.assign(new Error(`unexpected response ${res.statusCode}`), { status: res.statusCode })),
      );
    });
  }

  send(body: unknown): void {
    this.socket.send(typeof body === 'string' ? body : JSON.stringify(body));
  }

  /**
   * The messages of one type. The `subscribed` message a socket opened without patterns gets at once
   * (`implicit: true`: it receives every event until it subscribes) is left out, so that
   * `of('subscribed')` counts the answers to `subscribe` messages.
   */
  of(type: string): any[] {
    return this.messages.filter((m) => m.message_type === type && m.implicit !== true);
  }

  close(): void {
    this.socket.terminate();
  }
}

/** Polls until `check` returns true, or fails after `ms`. */
export async function until(check: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
