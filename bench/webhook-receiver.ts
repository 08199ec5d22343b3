/**
 * The webhook target of bench/webhook-throughput.ts, in its own process: a keep-alive node:http server that
 * answers every POST with 200, counts deliveries, and measures emit-to-delivery latency from the `sent_at`
 * (epoch ms) the emitter put in each event's data. Prints {url} when ready.
 *
 *   GET  /stats  → {count, first, last, p50_ms, p95_ms, p99_ms, max_ms, double_signed, sample: {headers, body}}
 *   GET  /count  → {count, last, double_signed} (cheap enough to poll: no percentiles)
 *   POST /reset  → forget everything
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let count = 0;
let first = 0;
let last = 0;
let latencies: number[] = [];
/** Deliveries whose `webhook-signature` held two signatures (a subscription in a secret rotation's overlap). */
let doubleSigned = 0;
let sample: { headers: Record<string, string>; body: string } | undefined;

const percentile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    const sorted = [...latencies].sort((a, b) => a - b);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        count,
        first,
        last,
        p50_ms: percentile(sorted, 0.5),
        p95_ms: percentile(sorted, 0.95),
        p99_ms: percentile(sorted, 0.99),
        max_ms: sorted.at(-1) ?? 0,
        double_signed: doubleSigned,
        sample,
      }),
    );
    return;
  }
  if (req.method === 'GET' && req.url === '/count') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count, last, double_signed: doubleSigned }));
    return;
  }
  if (req.method === 'POST' && req.url === '/reset') {
    count = 0;
    first = 0;
    last = 0;
    latencies = [];
    doubleSigned = 0;
    req.resume();
    res.end('ok');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    const hr = process.hrtime.bigint();
    count += 1;
    if (first === 0) first = now;
    last = now;
    const body = Buffer.concat(chunks).toString('utf8');
    // The bare loop's requests carry no sent_at; only deliveries are timed.
    // bench/delivery-latency.ts sends `sent_ns` (process.hrtime: the machine's monotonic clock, the same in
    // every process, unlike performance.timeOrigin + performance.now(), which drifts from it on these VMs).
    const ns = /"sent_ns":"(\d+)"/.exec(body);
    const match = ns ? undefined : /"sent_at":(\d+)/.exec(body);
    if (ns) latencies.push(Number(hr - BigInt(ns[1]!)) / 1e6);
    else if (match) latencies.push(now - Number(match[1]));
    const signature = req.headers['webhook-signature'];
    if (typeof signature === 'string' && signature.includes(' ')) doubleSigned += 1;
    if (!sample && req.headers['webhook-signature']) {
      sample = { headers: req.headers as Record<string, string>, body };
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
