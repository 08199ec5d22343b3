import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as sent (signatures are computed over it). */
  body: string;
  json: any;
  at: number;
}

/** What the receiver answers a request with: a status (default 200), headers, or never (`hang`). */
export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  delayMs?: number;
  hang?: boolean;
  /** The response body (default `ok`). */
  body?: string;
}

/**
 * A real webhook target on 127.0.0.1 (port 0): records every request and answers as `respond` says.
 * `close()` also ends connections a hanging reply holds open.
 */
export class Receiver {
  readonly requests: Received[] = [];
  respond: (req: Received) => Reply = () => ({});
  private readonly server: Server;
  private readonly hanging = new Set<ServerResponse>();
  url = '';

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const received: Received = {
          path: req.url ?? '/',
          headers: req.headers,
          body,
          json,
          at: performance.now(),
        };
        this.requests.push(received);
        const reply = this.respond(received);
        if (reply.hang) {
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          return;
        }
        const send = () => {
          res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...(reply.headers ?? {}) });
          res.end(reply.body ?? 'ok');
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    this.server.keepAliveTimeout = 60_000;
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    return this.url;
  }

  /** Requests whose path is `path`. */
  at(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
