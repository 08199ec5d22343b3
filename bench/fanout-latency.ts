/**
 * Fan-out latency: WebSocket and SSE subscribers on the platform (its own process), events emitted at a fixed
 * rate, and the time from the emit request to each client's receipt (p50, p99, max). Bounded by --duration.
 * Every client counts what it receives; one in --sample also times it (bench/stream-readers.ts). The events
 * come from a producer process of its own (bench/fanout-emitter.ts). The CPU the server and the clients used
 * while it ran is printed too: on a small host the clients can be the limit, not the server.
 * `--mode sqlite` (the default) or `postgres` measures the platform (bench/emit-server.ts); `--mode bare` the
 * same load against a bare node:http + ws broadcaster (bench/bare-fanout-server.ts), the figures' baseline.
 *
 *   npm run bench:fanout -- --ws 1000 --sse 1000 --rate 1000 --duration 5
 *   npm run bench:fanout -- --ws 1000 --sse 1000 --rate 1000 --duration 5 --mode bare
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { benchNodeArgs } from './platform-process.js';
import { cpuSeconds } from './process-cpu.js';
import { openSseReader, openWsReader, type StreamReader } from './stream-readers.js';

const { values } = parseArgs({
  options: {
    ws: { type: 'string', default: '200' },
    sse: { type: 'string', default: '200' },
    rate: { type: 'string', default: '200' },
    duration: { type: 'string', default: '5' },
    // sqlite or postgres: the platform; bare: the bare broadcaster (bench/bare-fanout-server.ts).
    mode: { type: 'string', default: 'sqlite' },
    // One connection in this many times its events (all of them count theirs).
    sample: { type: 'string', default: '10' },
    // Connections the emitter posts over (each carries one emit at a time).
    'emit-sockets': { type: 'string', default: '32' },
    // One JSON line instead of the table (bench/run-all.ts reads it).
    json: { type: 'boolean', default: false },
  },
});
const wsCount = Number(values.ws);
const sseCount = Number(values.sse);
const rate = Number(values.rate);
const duration = Math.min(Number(values.duration), 20);
const now = () => performance.timeOrigin + performance.now();

// PLATFORM_BENCH_NODE_ARGS (profiling) are for the platform only.
const serverArgs =
  values.mode === 'bare'
    ? ['--import', 'tsx', 'bench/bare-fanout-server.ts']
    : [...benchNodeArgs(), '--import', 'tsx', 'bench/emit-server.ts', values.mode!];
const child = spawn(process.execPath, serverArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
let server: { url: string; token: string } | undefined;
for await (const line of createInterface({ input: child.stdout! })) {
  if (line.startsWith('{"url":')) {
    server = JSON.parse(line) as { url: string; token: string };
    break;
  }
}
if (!server) throw new Error('the server did not start');
const { url, token } = server;

// Warm-up, as the HTTP cases have: the platform compiles a route's schemas on its first request (a few tens of
// milliseconds for the emit route), which belongs to start-up, not to the latency of the first events measured.
for (let i = 0; i < 20; i++) {
  await fetch(`${url}/api/v1/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ event_type: 'warm.up', data: { i } }),
  });
}

const latencies: number[] = [];
// Every reader counts its events; one in `sample` also times each of them (spread over the connection order,
// so the first and the last clients the server writes to are both in the sample).
const sampleEvery = Math.max(1, Number(values.sample));
const sample = (sentAt: number) => latencies.push(now() - sentAt);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4096 });
const opening: Promise<StreamReader>[] = [];
const streamPath = '/api/v1/events/stream?patterns=fan.*';
for (let i = 0; i < wsCount; i++) {
  const wsUrl = `${url}${streamPath}&token=${token}`;
  opening.push(openWsReader(wsUrl, i % sampleEvery === 0 ? sample : undefined));
}
for (let i = 0; i < sseCount; i++) {
  opening.push(
    openSseReader(`${url}${streamPath}`, token, agent, i % sampleEvery === 0 ? sample : undefined),
  );
}
const readers = await Promise.all(opening);
await new Promise((r) => setTimeout(r, 500));
const receivedNow = () => readers.reduce((n, r) => n + r.received, 0);
// Protocol messages counted before the first emit (a WebSocket's `subscribed`) are not deliveries.
const before = receivedNow();
latencies.length = 0;

// The producer runs in a process of its own (bench/fanout-emitter.ts); the CPU of both client processes counts.
const emitter = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    'bench/fanout-emitter.ts',
    JSON.stringify({ url, token, rate, duration, sockets: Number(values['emit-sockets']) }),
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const emitterLines = createInterface({ input: emitter.stdout! })[Symbol.asyncIterator]();
const nextLine = async <T>(): Promise<T> => {
  const line = await emitterLines.next();
  if (line.done) throw new Error('the emitter stopped early');
  return JSON.parse(line.value) as T;
};
const { started, cpu: emitterCpuBefore } = await nextLine<{ started: number; cpu: number }>();
const cpuBefore = { server: cpuSeconds(child.pid!), client: cpuSeconds(process.pid) };
// Every emit answered, or 10 s after the last one was sent.
const {
  emitted,
  answered_in_time: answeredInTime,
  cpu: emitterCpuAfter,
} = await nextLine<{ emitted: number; answered_in_time: number; cpu: number }>();
// Bounded: what has not arrived 10 s after the last emit was sent counts as not delivered.
const deadline = started + duration * 1000 + 10_000;
const expected = emitted * (wsCount + sseCount);
let received = receivedNow() - before;
while (received < expected && now() < deadline) {
  await new Promise((r) => setTimeout(r, 50));
  received = receivedNow() - before;
}

const elapsed = (now() - started) / 1000;
const serverCpuSeconds = cpuSeconds(child.pid!) - cpuBefore.server;
const cpu = {
  server: serverCpuSeconds / elapsed,
  client: (cpuSeconds(process.pid) - cpuBefore.client + emitterCpuAfter - emitterCpuBefore) / elapsed,
};
// The server's own part: from the hub taking an event to the end of the write to its last client.
const hub = (await (
  await fetch(`${url}/api/v1/services/stream_hub`, { headers: { authorization: `Bearer ${token}` } })
).json()) as { data: { metrics: Record<string, number> } };
const offerDelay = {
  p50: hub.data.metrics['offer_delay_p50_ms'],
  p99: hub.data.metrics['offer_delay_p99_ms'],
};
for (const reader of readers) reader.close();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));

latencies.sort((a, b) => a - b);
const round = (x: number) => Math.round(x * 100) / 100;
const pct = (p: number) =>
  latencies.length
    ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1)
    : '–';
if (values.json) {
  const ms = (p: number) => (latencies.length ? Number(pct(p)) : null);
  process.stdout.write(
    `${JSON.stringify({ ws: wsCount, sse: sseCount, rate, duration, mode: values.mode, emitted, answered_in_time: answeredInTime, delivered: received, expected, p50_ms: ms(0.5), p95_ms: ms(0.95), p99_ms: ms(0.99), max_ms: latencies.at(-1) ?? null, server_cpu: round(cpu.server), server_cpu_us_per_event: emitted > 0 ? Math.round((serverCpuSeconds * 1e6) / emitted) : null, client_cpu: round(cpu.client), server_offer_p50_ms: offerDelay.p50, server_offer_p99_ms: offerDelay.p99, events_per_flush: hub.data.metrics['average_events_per_flush'], flush_ms: hub.data.metrics['average_flush_ms'] })}\n`,
  );
  process.exit(0);
}
process.stdout.write(
  `\n${wsCount} WebSocket + ${sseCount} SSE subscribers, ${emitted} events at ${rate}/s over ${duration} s (${values.mode})\n\n` +
    '| delivered | expected | p50 ms | p99 ms | max ms | server p50/p99 ms | emits answered in time | server CPU | client CPU |\n' +
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n' +
    `| ${received} | ${expected} | ${pct(0.5)} | ${pct(0.99)} | ${latencies.at(-1)?.toFixed(1) ?? '–'} | ${offerDelay.p50?.toFixed(1)}/${offerDelay.p99?.toFixed(1)} | ${answeredInTime} | ${round(cpu.server)} | ${round(cpu.client)} |\n` +
    '\nServer p50/p99: from the hub taking a committed event (bare: the parsed emit) to the end of its write to\n' +
    'the last client.\n' +
    'CPU in cores, from the first emit to the last delivery (client: the readers and the emitter); emits answered\n' +
    'before the last one was sent.\n',
);
