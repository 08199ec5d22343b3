/**
 * Fan-out latency: WebSocket and SSE subscribers on the platform (its own process), events emitted at a fixed
 * rate, and the time from the emit request to each client's receipt (p50, p99, max). Bounded by --duration.
 *
 *   npm run bench:fanout -- --ws 1000 --sse 1000 --rate 1000 --duration 5
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { WebSocket } from 'ws';
import { benchNodeArgs } from './platform-process.js';

const { values } = parseArgs({
  options: {
    ws: { type: 'string', default: '200' },
    sse: { type: 'string', default: '200' },
    rate: { type: 'string', default: '200' },
    duration: { type: 'string', default: '5' },
    mode: { type: 'string', default: 'sqlite' },
    // One JSON line instead of the table (bench/run-all.ts reads it).
    json: { type: 'boolean', default: false },
  },
});
const wsCount = Number(values.ws);
const sseCount = Number(values.sse);
const rate = Number(values.rate);
const duration = Math.min(Number(values.duration), 20);
const now = () => performance.timeOrigin + performance.now();

const child = spawn(
  process.execPath,
  [...benchNodeArgs(), '--import', 'tsx', 'bench/emit-server.ts', values.mode!],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let server: { url: string; token: string } | undefined;
for await (const line of createInterface({ input: child.stdout! })) {
  if (line.startsWith('{"url":')) {
    server = JSON.parse(line) as { url: string; token: string };
    break;
  }
}
if (!server) throw new Error('the server did not start');
const { url, token } = server;

const latencies: number[] = [];
let received = 0;
const record = (payload: string) => {
  const sentAt = (JSON.parse(payload) as { data?: { sent_at?: number } }).data?.sent_at;
  if (typeof sentAt === 'number') {
    latencies.push(now() - sentAt);
    received += 1;
  }
};

const agent = new http.Agent({ keepAlive: true, maxSockets: 4096 });
const sockets: WebSocket[] = [];
const requests: http.ClientRequest[] = [];
const opening: Promise<void>[] = [];
for (let i = 0; i < wsCount; i++) {
  const ws = new WebSocket(
    `${url.replace(/^http/, 'ws')}/api/v1/events/stream?patterns=fan.*&token=${token}`,
  );
  sockets.push(ws);
  ws.on('message', (raw) => {
    const m = JSON.parse(raw.toString()) as { message_type: string; event?: unknown };
    if (m.message_type === 'event') record(JSON.stringify(m.event));
  });
  opening.push(new Promise((resolve, reject) => ws.once('open', () => resolve()).once('error', reject)));
}
for (let i = 0; i < sseCount; i++) {
  opening.push(
    new Promise((resolve, reject) => {
      const req = http.get(
        `${url}/api/v1/events/stream?patterns=fan.*`,
        { agent, headers: { authorization: `Bearer ${token}` } },
        (res) => {
          let buffer = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buffer += chunk;
            let cut = buffer.indexOf('\n\n');
            while (cut !== -1) {
              const data = buffer
                .slice(0, cut)
                .split('\n')
                .find((l) => l.startsWith('data: '));
              if (data) record(data.slice(6));
              buffer = buffer.slice(cut + 2);
              cut = buffer.indexOf('\n\n');
            }
          });
          resolve();
        },
      );
      req.on('error', reject);
      requests.push(req);
    }),
  );
}
await Promise.all(opening);
await new Promise((r) => setTimeout(r, 500));

const emitAgent = new http.Agent({ keepAlive: true, maxSockets: 32 });
const emitOne = () =>
  new Promise<void>((resolve) => {
    const body = JSON.stringify({ event_type: 'fan.tick', data: { sent_at: now() } });
    const req = http.request(
      `${url}/api/v1/events`,
      {
        method: 'POST',
        agent: emitAgent,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve());
      },
    );
    req.on('error', () => resolve());
    req.end(body);
  });

let emitted = 0;
const started = now();
const pending: Promise<void>[] = [];
while (now() - started < duration * 1000) {
  const due = Math.floor(((now() - started) / 1000) * rate);
  while (emitted < due) {
    pending.push(emitOne());
    emitted += 1;
  }
  await new Promise((r) => setTimeout(r, 2));
}
// Bounded: what has not arrived 10 s after the last emit was sent counts as not delivered.
const deadline = now() + 10_000;
await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 10_000))]);
const expected = emitted * (wsCount + sseCount);
while (received < expected && now() < deadline) await new Promise((r) => setTimeout(r, 50));

for (const ws of sockets) ws.terminate();
for (const req of requests) req.destroy();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));

latencies.sort((a, b) => a - b);
const pct = (p: number) =>
  latencies.length
    ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1)
    : '–';
if (values.json) {
  const ms = (p: number) => (latencies.length ? Number(pct(p)) : null);
  process.stdout.write(
    `${JSON.stringify({ ws: wsCount, sse: sseCount, rate, duration, mode: values.mode, emitted, delivered: received, expected, p50_ms: ms(0.5), p99_ms: ms(0.99), max_ms: latencies.at(-1) ?? null })}\n`,
  );
  process.exit(0);
}
process.stdout.write(
  `\n${wsCount} WebSocket + ${sseCount} SSE subscribers, ${emitted} events at ${rate}/s over ${duration} s (${values.mode})\n\n` +
    '| delivered | expected | p50 ms | p99 ms | max ms |\n|---:|---:|---:|---:|---:|\n' +
    `| ${received} | ${expected} | ${pct(0.5)} | ${pct(0.99)} | ${latencies.at(-1)?.toFixed(1) ?? '–'} |\n`,
);
