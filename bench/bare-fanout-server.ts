/**
 * The baseline of the fan-out figures: the least a server must do to fan events out, in its own process —
 * node:http and the `ws` package, no authentication, no storage, no filters, no Fastify. It serves what
 * bench/fanout-latency.ts, bench/fanout-emitter.ts and bench/stream-readers.ts use, and accepts (and ignores)
 * any token:
 *
 *   POST /api/v1/events             parses the JSON body, answers 201 with a small JSON body, broadcasts the event
 *   GET  /api/v1/events/stream      SSE (`id:`/`event:`/`data:` frames), or a WebSocket on upgrade
 *                                   (`{"message_type":"event","event":{…}}` text messages)
 *   GET  /api/v1/services/stream_hub  its own offer delay, measured as the platform's hub measures its own
 *
 * Each event's frames carry the fields of the platform's (src/streams/hub-event.ts: event_id, event_type,
 * source, timestamp, priority, data, sequence), ids of the same length, so both servers write the same bytes.
 * As a good hand-written broadcaster does, it writes each client at most once per turn of the event loop: the
 * events taken since the last flush go out as one buffer per transport (SSE as one ready-made HTTP chunk,
 * WebSocket as consecutive unmasked text frames), built once and written to every client's socket as it is, a
 * slice of clients per turn so that emits keep being taken meanwhile. A flush starts on the turn after an
 * event is taken, or as soon as the one under way ends; it does not wait longer to gather more events.
 * Prints one JSON line {url, token} when ready (as bench/emit-server.ts does); stops on SIGTERM.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { WebSocketServer } from 'ws';
import { LatencyHistogram } from '../src/metrics/latency-histogram.js';

const STREAM_PATH = '/api/v1/events/stream';

/** An event taken and not yet written: its frames, and when it was taken (performance.now()). */
interface Pending {
  sse: string;
  ws: Buffer;
  takenAt: number;
}

/** A stream client: its socket, and for SSE its response and whether that is in chunked encoding (HTTP/1.1). */
interface Client {
  socket: Socket;
  sse?: { res: ServerResponse; chunked: boolean };
}

// A flush writes to this many clients per turn of the event loop (about 2 ms of writes), then lets the loop
// take emits. Written all at once, 2,000 clients held the loop for 20–30 ms a flush, the emitter's 32
// connections could bring at most 32 events per turn, and at 1,000 events/s the emits backed up (p50 0.45–1.8 s
// in three runs, against about 50 ms sliced). The platform's hub slices its flushes the same way
// (WRITES_PER_TURN in src/streams/stream-hub.ts), but also waits after a long flush; this one does not.
const WRITES_PER_TURN = 256;

const clients = new Set<Client>();
let sseCount = 0;
let pending: Pending[] = [];
let flushScheduled = false;
/** The flush under way: the clients when it began, how far it got, the bytes, and its writing time so far. */
let current:
  | {
      targets: Client[];
      next: number;
      events: Pending[];
      sse: Buffer;
      sseChunk: Buffer;
      ws: Buffer;
      spent: number;
    }
  | undefined;
let sequence = 0;
// From taking an event to the end of its write to the last client, as the platform's stream_hub reports it.
const offerDelay = new LatencyHistogram();
let flushes = 0;
let flushedEvents = 0;
let flushMs = 0;

/** `evt_` + 26 characters, as long as the platform's ids: milliseconds and a counter in base 32. */
const eventId = (n: number) =>
  `evt_${Date.now().toString(32).padStart(10, '0')}${n.toString(32).padStart(16, '0')}`;

/** An unmasked WebSocket text frame (what a server sends). */
function wsTextFrame(payload: Buffer): Buffer {
  const n = payload.length;
  const header = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + n);
  frame[0] = 0x81;
  if (n < 126) frame[1] = n;
  else if (n < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(n), 2);
  }
  payload.copy(frame, header);
  return frame;
}

function take(body: { event_type: string; source?: string; priority?: number; data?: unknown }) {
  sequence += 1;
  const event = {
    event_id: eventId(sequence),
    event_type: body.event_type,
    source: body.source ?? 'api',
    timestamp: new Date().toISOString(),
    priority: body.priority ?? 5,
    data: body.data ?? {},
    sequence,
  };
  const json = JSON.stringify(event);
  pending.push({
    sse: `id: ${event.event_id}\nevent: ${event.event_type}\ndata: ${json}\n\n`,
    ws: wsTextFrame(Buffer.from(`{"message_type":"event","event":${json}}`)),
    takenAt: performance.now(),
  });
  scheduleFlush();
  return event;
}

function scheduleFlush(): void {
  if (flushScheduled || current) return;
  flushScheduled = true;
  setImmediate(flush);
}

/**
 * Everything taken since the last flush, to every client: one write per client of a buffer built once per
 * transport. The writes go out a slice of clients per turn, so emits keep being taken (into the next flush)
 * while thousands of clients are written to; each client is written at most once per turn, and in order.
 */
function flush(): void {
  flushScheduled = false;
  const events = pending;
  pending = [];
  if (events.length === 0) return;
  const started = performance.now();
  const sse = Buffer.from(events.map((e) => e.sse).join(''));
  const sseChunk = Buffer.concat([Buffer.from(`${sse.length.toString(16)}\r\n`), sse, Buffer.from('\r\n')]);
  const ws = events.length === 1 ? events[0]!.ws : Buffer.concat(events.map((e) => e.ws));
  current = { targets: [...clients], next: 0, events, sse, sseChunk, ws, spent: performance.now() - started };
  step();
}

function step(): void {
  const c = current!;
  const started = performance.now();
  const end = Math.min(c.targets.length, c.next + WRITES_PER_TURN);
  for (; c.next < end; c.next++) {
    const { socket, sse } = c.targets[c.next]!;
    if (!sse) socket.write(c.ws);
    // Straight to the socket unless the response still holds bytes of its own (then through it, in order).
    else if (sse.res.writableLength !== socket.writableLength) sse.res.write(c.sse);
    else socket.write(sse.chunked ? c.sseChunk : c.sse);
  }
  const ended = performance.now();
  c.spent += ended - started;
  if (c.next < c.targets.length) {
    setImmediate(step);
    return;
  }
  current = undefined;
  for (const e of c.events) offerDelay.record(ended - e.takenAt);
  flushMs += c.spent;
  flushes += 1;
  flushedEvents += c.events.length;
  if (pending.length > 0) scheduleFlush();
}

function emit(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: { event_type?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event_type?: unknown };
    } catch {
      body = {};
    }
    if (typeof body?.event_type !== 'string') {
      send(res, 400, { success: false, error: { code: 'VALIDATION_ERROR' } });
      return;
    }
    const event = take(body as { event_type: string });
    const { event_id, event_type, source, timestamp, priority } = event;
    const subscriber_count = clients.size;
    send(res, 201, {
      success: true,
      data: {
        event: { event_id, event_type, source, timestamp, priority, status: 'emitted', subscriber_count },
      },
    });
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}

function openSse(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
  });
  res.write(`retry: 3000\n: connected ${new Date().toISOString()}\n\n`);
  const client: Client = { socket: res.socket!, sse: { res, chunked: res.chunkedEncoding } };
  clients.add(client);
  sseCount += 1;
  res.on('close', () => {
    if (clients.delete(client)) sseCount -= 1;
  });
}

const server = createServer((req, res) => {
  const path = req.url?.split('?', 1)[0];
  if (req.method === 'POST' && path === '/api/v1/events') emit(req, res);
  else if (req.method === 'GET' && path === STREAM_PATH && res.socket) openSse(res);
  else if (req.method === 'GET' && path === '/api/v1/services/stream_hub') {
    send(res, 200, {
      success: true,
      data: {
        name: 'stream_hub',
        metrics: {
          active_connections: clients.size,
          sse_connections: sseCount,
          websocket_connections: clients.size - sseCount,
          flushes,
          average_events_per_flush: flushes ? flushedEvents / flushes : 0,
          average_flush_ms: flushes ? flushMs / flushes : 0,
          offer_delay_p50_ms: offerDelay.quantile(0.5),
          offer_delay_p99_ms: offerDelay.quantile(0.99),
          last_sequence: sequence,
        },
      },
    });
  } else {
    req.resume();
    send(res, 404, { success: false, error: { code: 'NOT_FOUND' } });
  }
});

// The `ws` package does the opening handshake and reads the client's frames (pongs, closes); the events go
// straight to the socket it was handed, the same net.Socket.
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });
server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
  if (req.url?.split('?', 1)[0] !== STREAM_PATH) {
    socket.destroy();
    return;
  }
  wss.handleUpgrade(req, socket, head, (client) => {
    client.send(JSON.stringify({ message_type: 'subscribed', patterns: ['*'], filters: {} }));
    const entry: Client = { socket };
    clients.add(entry);
    client.on('close', () => clients.delete(entry));
  });
});

// The emitter's keep-alive connections stay open between its emits.
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, token: 'bare' })}\n`);
});
process.on('SIGTERM', () => {
  for (const c of clients) c.socket.destroy();
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
