import http from 'node:http';
import net from 'node:net';

export interface ClusterProxy {
  readonly url: string;
  close(): Promise<void>;
}

/** How long an instance that refused a connection is left out of the rotation. */
const RESTING_MS = 2000;
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade'];

/**
 * A small round-robin reverse proxy for trying a local cluster (`npm run cluster`): plain requests, SSE
 * (responses are streamed, never buffered) and WebSocket upgrades (spliced as raw sockets). It appends the
 * client's address to X-Forwarded-For, which the instances believe because they trust 127.0.0.1. Not for
 * production: there, put nginx or another load balancer in front (docs/deploy.md).
 */
export async function startClusterProxy(host: string, port: number, targets: URL[]): Promise<ClusterProxy> {
  let next = 0;
  const restingUntil = new Map<string, number>();
  const pick = (): URL => {
    for (let n = 0; n < targets.length; n++) {
      const target = targets[next++ % targets.length]!;
      if ((restingUntil.get(target.host) ?? 0) <= Date.now()) return target;
    }
    return targets[next++ % targets.length]!;
  };
  const forwardedFor = (req: http.IncomingMessage) => {
    const prior = req.headers['x-forwarded-for'];
    const client = req.socket.remoteAddress ?? '';
    return prior ? `${String(prior)}, ${client}` : client;
  };

  const server = http.createServer((req, res) => {
    const target = pick();
    const headers: http.IncomingHttpHeaders = { ...req.headers, 'x-forwarded-for': forwardedFor(req) };
    for (const h of HOP_BY_HOP) delete headers[h];
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        // Streams (SSE) must reach the client as they are written.
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') restingUntil.set(target.host, Date.now() + RESTING_MS);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(502, { 'content-type': 'application/json; charset=utf-8' });
      res.end(
        JSON.stringify({
          success: false,
          error: {
            code: 'SERVICE_UNAVAILABLE',
            message: `Instance ${target.host} did not answer: ${err.message}`,
          },
          timestamp: new Date().toISOString(),
          request_id: String(req.headers['x-request-id'] ?? ''),
        }),
      );
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });

  server.on('upgrade', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = pick();
    const upstream = net.connect(Number(target.port), target.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      const headers = { ...req.headers, 'x-forwarded-for': forwardedFor(req) };
      for (const [name, value] of Object.entries(headers)) {
        for (const v of Array.isArray(value) ? value : [value])
          if (v !== undefined) lines.push(`${name}: ${v}`);
      }
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
