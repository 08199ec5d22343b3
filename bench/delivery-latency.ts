/**
 * Delivery latency under a steady load (issue 26): the time from an emit request to the receipt of its
 * delivery, p50/p95/p99/max, and the server's CPU per event, next to a bare baseline measured in the same run.
 *
 * Webhook cases (each on a new platform, `platform serve` on SQLite in its own process; the receiver,
 * bench/webhook-receiver.ts, in another; the paced emitter in this one): 200 events/s to one subscription,
 * 1,000/s to one subscription, 1,000/s spread over ten. Each case then runs against the bare baseline
 * (bench/bare-delivery-server.ts: a Fastify route that stores the event with the same driver and sync setting
 * and posts it at once, signed, from the same process) with the same emitter and receiver. While a case runs,
 * a connection of its own polls `GET /api/v1/health` every 10 ms: the longest answer is the server's stall.
 *
 * Stream case: 100 WebSocket + 100 SSE clients at 1,000 events/s (bench/fanout-latency.ts: the clients in a
 * process of their own, the emitter in another), the platform and then the bare broadcaster.
 *
 *   npm run bench:latency                       # 15 s per case, about 3 minutes
 *   npm run bench:latency -- --duration 5 --only webhooks
 *   npm run -s bench:latency -- --json          # one JSON line
 *   npm run bench:latency -- --only webhooks --cases 1 --sides platform   # one case, e.g. to profile it
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { runToEnd, spawnJsonChild } from './json-child.js';
import { ADMIN_PASSWORD, platformRuntime, startPlatformProcess } from './platform-process.js';
import { cpuSeconds } from './process-cpu.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '15' },
    // webhooks, streams, or both (comma-separated)
    only: { type: 'string', default: 'webhooks,streams' },
    // Which webhook cases (1–3, in the order above) and sides run: for profiling one of them.
    cases: { type: 'string', default: '1,2,3' },
    sides: { type: 'string', default: 'platform,bare' },
    json: { type: 'boolean', default: false },
  },
});
const duration = Math.max(1, Math.min(Number(values.duration), 30));
const only = values.only!.split(',').map((s) => s.trim());
const caseNumbers = values.cases!.split(',').map(Number);
const sides = values.sides!.split(',').map((s) => s.trim());
const SECRET = 'bench-webhook-secret';
const DRAIN_MS = 10_000;
const now = () => performance.timeOrigin + performance.now();
const log = (line: string) => process.stderr.write(`${line}\n`);

export interface LatencyFigures {
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface WebhookLatencyCase {
  case: string;
  rate: number;
  subscriptions: number;
  side: 'platform' | 'bare';
  emitted: number;
  received: number;
  expected: number;
  latency: LatencyFigures;
  /** Server CPU (user + system) per emitted event, over the emits and the deliveries. */
  cpu_ms_per_event: number;
  /** The longest GET /api/v1/health answer (polled every 10 ms) while the case ran. */
  stall_ms: number;
  /** The platform's claims over the case, and the rows they took on average (warm-up included). */
  claims: number | null;
  rows_per_claim: number | null;
}

interface ReceiverStats extends LatencyFigures {
  count: number;
}

const CASES = [
  { case: '200/s, 1 subscription', rate: 200, subscriptions: 1 },
  { case: '1000/s, 1 subscription', rate: 1000, subscriptions: 1 },
  { case: '1000/s, 10 subscriptions', rate: 1000, subscriptions: 10 },
];

/** Emits `rate` events a second for `seconds`, open loop (each on its schedule, not after the last answer). */
async function emitPaced(
  url: string,
  token: string | undefined,
  rate: number,
  seconds: number,
  subscriptions: number,
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  let refused = 0;
  const emitOne = (n: number) =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({
        event_type: `latency.s${n % subscriptions}`,
        source: 'bench',
        data: { sent_ns: String(process.hrtime.bigint()), n, customer: 'c-42', total: 99.5 },
      });
      const req = http.request(`${url}/api/v1/events`, { method: 'POST', agent, headers }, (res) => {
        if (res.statusCode !== 201) refused += 1;
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', () => {
        refused += 1;
        resolve();
      });
      req.end(body);
    });
  const pending: Promise<void>[] = [];
  const started = now();
  let emitted = 0;
  while (now() - started < seconds * 1000) {
    const due = Math.floor(((now() - started) / 1000) * rate);
    while (emitted < due) pending.push(emitOne(emitted++));
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(pending);
  agent.destroy();
  return { emitted: emitted - refused, refused };
}

/** Polls GET /api/v1/health every 10 ms until stopped; the longest answer. */
function stallProbe(url: string) {
  const pool = new Pool(url, { connections: 1 });
  let longest = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const res = await pool.request({ method: 'GET', path: '/api/v1/health' }).catch(() => undefined);
      await res?.body.dump();
      longest = Math.max(longest, performance.now() - started);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return async () => {
    running = false;
    await loop;
    await pool.close();
    return longest;
  };
}

async function runWebhookCase(
  spec: (typeof CASES)[number],
  side: 'platform' | 'bare',
  receiverUrl: string,
): Promise<WebhookLatencyCase> {
  const targets = Array.from({ length: spec.subscriptions }, (_, i) => `${receiverUrl}/hook/${i}`);
  let url: string;
  let pid: number;
  let token: string | undefined;
  let stop: () => Promise<unknown>;
  if (side === 'platform') {
    const platform = await startPlatformProcess({
      runtime: platformRuntime(),
      env: { PLATFORM__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true' },
    });
    ({ url, pid } = platform);
    stop = () => platform.stop();
    const login = await fetch(`${url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
    });
    token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
    for (const [i, target] of targets.entries()) {
      const res = await fetch(`${url}/api/v1/events/subscriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `latency ${i}`,
          event_patterns: [`latency.s${i}`],
          webhook_config: { url: target, secret: SECRET },
        }),
      });
      if (res.status !== 201) throw new Error(`subscription ${i}: ${res.status} ${await res.text()}`);
    }
  } else {
    const bare = await spawnJsonChild<{ url: string }>('bare-delivery-server.ts', [
      JSON.stringify({ targets, secret: SECRET }),
    ]);
    url = bare.first.url;
    pid = bare.child.pid!;
    stop = async () => {
      bare.child.kill('SIGTERM');
      await bare.exited;
    };
  }
  const stats = async () => (await (await fetch(`${receiverUrl}/stats`)).json()) as ReceiverStats;
  const reset = () => fetch(`${receiverUrl}/reset`, { method: 'POST' }).then((r) => r.text());
  try {
    // Warm-up (route schemas compiled on first use, the HTTP pool opened): 2 s at a tenth of the rate.
    await reset();
    const warm = await emitPaced(url, token, Math.max(20, spec.rate / 10), 2, spec.subscriptions);
    const warmDeadline = performance.now() + DRAIN_MS;
    while ((await stats()).count < warm.emitted && performance.now() < warmDeadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await reset();
    const probe = stallProbe(url);
    const cpuBefore = cpuSeconds(pid);
    const { emitted } = await emitPaced(url, token, spec.rate, duration, spec.subscriptions);
    const drainEnd = performance.now() + DRAIN_MS;
    let result = await stats();
    while (result.count < emitted && performance.now() < drainEnd) {
      await new Promise((r) => setTimeout(r, 20));
      result = await stats();
    }
    const cpu = cpuSeconds(pid) - cpuBefore;
    const stall = await probe();
    let claims: number | null = null;
    let rowsPerClaim: number | null = null;
    if (token) {
      const res = await fetch(`${url}/api/v1/services/webhook_dispatcher`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const metrics = ((await res.json()) as { data: { metrics: Record<string, number> } }).data.metrics;
      claims = metrics['claims'] ?? null;
      const rows = metrics['claimed_rows'];
      rowsPerClaim = claims && rows !== undefined ? Math.round((rows / claims) * 10) / 10 : null;
    }
    return {
      case: spec.case,
      rate: spec.rate,
      subscriptions: spec.subscriptions,
      side,
      emitted,
      received: result.count,
      expected: emitted,
      latency: { p50_ms: result.p50_ms, p95_ms: result.p95_ms, p99_ms: result.p99_ms, max_ms: result.max_ms },
      cpu_ms_per_event: Math.round((cpu * 1000 * 1000) / Math.max(1, emitted)) / 1000,
      stall_ms: Math.round(stall * 10) / 10,
      claims,
      rows_per_claim: rowsPerClaim,
    };
  } finally {
    await stop();
  }
}

export interface StreamLatencyCase {
  side: 'platform' | 'bare';
  clients: string;
  rate: number;
  emitted: number;
  delivered: number;
  expected: number;
  latency: LatencyFigures | null;
  server_cpu_cores: number;
}

async function runStreamCase(side: 'platform' | 'bare'): Promise<StreamLatencyCase> {
  const args = [
    '--ws',
    '100',
    '--sse',
    '100',
    '--rate',
    '1000',
    '--duration',
    String(Math.min(duration, 20)),
  ];
  args.push('--mode', side === 'platform' ? 'sqlite' : 'bare', '--json');
  const { code, lines } = await runToEnd('fanout-latency.ts', args);
  const line = lines.filter((l) => l.startsWith('{')).at(-1);
  if (code !== 0 || !line) throw new Error(`fanout-latency.ts exited with ${code}`);
  const r = JSON.parse(line) as {
    emitted: number;
    delivered: number;
    expected: number;
    p50_ms: number | null;
    p95_ms: number | null;
    p99_ms: number | null;
    max_ms: number | null;
    server_cpu: number;
  };
  return {
    side,
    clients: '100 WebSocket + 100 SSE',
    rate: 1000,
    emitted: r.emitted,
    delivered: r.delivered,
    expected: r.expected,
    latency:
      r.p50_ms === null
        ? null
        : { p50_ms: r.p50_ms, p95_ms: r.p95_ms ?? 0, p99_ms: r.p99_ms ?? 0, max_ms: r.max_ms ?? 0 },
    server_cpu_cores: r.server_cpu,
  };
}

const webhooks: WebhookLatencyCase[] = [];
const streams: StreamLatencyCase[] = [];
if (only.includes('webhooks')) {
  const receiver = await spawnJsonChild<{ url: string }>('webhook-receiver.ts', []);
  try {
    log(`platform: ${platformRuntime().label}; ${duration} s per case`);
    for (const [n, spec] of CASES.entries()) {
      if (!caseNumbers.includes(n + 1)) continue;
      for (const side of ['platform', 'bare'] as const) {
        if (!sides.includes(side)) continue;
        const result = await runWebhookCase(spec, side, receiver.first.url);
        const l = result.latency;
        log(
          `  ${spec.case}, ${side}: ${result.received}/${result.expected} received; p50/p95/p99/max ` +
            `${l.p50_ms.toFixed(1)}/${l.p95_ms.toFixed(1)}/${l.p99_ms.toFixed(1)}/${l.max_ms.toFixed(1)} ms; ` +
            `${result.cpu_ms_per_event} ms CPU per event; health stall ${result.stall_ms} ms` +
            (result.claims === null ? '' : `; ${result.claims} claims, ${result.rows_per_claim} rows each`),
        );
        webhooks.push(result);
      }
    }
  } finally {
    receiver.child.kill('SIGTERM');
    await receiver.exited;
  }
}
if (only.includes('streams')) {
  for (const side of ['platform', 'bare'] as const) {
    if (!sides.includes(side)) continue;
    const result = await runStreamCase(side);
    const l = result.latency;
    log(
      `  streams, ${result.clients} at ${result.rate}/s, ${side}: ${result.delivered}/${result.expected}; ` +
        (l
          ? `p50/p95/p99/max ${[l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms].map((x) => x.toFixed(1)).join('/')} ms`
          : 'no figure') +
        `; server ${result.server_cpu_cores} cores`,
    );
    streams.push(result);
  }
}

if (values.json) {
  process.stdout.write(`${JSON.stringify({ duration_seconds: duration, webhooks, streams })}\n`);
} else {
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  const lines = [
    `\nemit → receipt, ${duration} s per case\n`,
    '| case | side | received | p50 ms | p95 ms | p99 ms | max ms | server CPU ms/event | health stall ms |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...webhooks.map(
      (r) =>
        `| webhook ${r.case} | ${r.side} | ${r.received}/${r.expected} | ${f(r.latency.p50_ms)} | ` +
        `${f(r.latency.p95_ms)} | ${f(r.latency.p99_ms)} | ${f(r.latency.max_ms)} | ${r.cpu_ms_per_event} | ${r.stall_ms} |`,
    ),
    ...streams.map(
      (r) =>
        `| ${r.clients} at ${r.rate}/s | ${r.side} | ${r.delivered}/${r.expected} | ` +
        (r.latency
          ? `${f(r.latency.p50_ms)} | ${f(r.latency.p95_ms)} | ${f(r.latency.p99_ms)} | ${f(r.latency.max_ms)}`
          : '– | – | – | –') +
        ` | (${r.server_cpu_cores} cores) | – |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
