/**
 * Webhook delivery throughput: the platform (`platform serve` on SQLite, its own process) delivers to a local
 * keep-alive receiver (its own process) for 10 subscriptions while events are emitted through the HTTP API;
 * then, in the same run, a bare undici loop POSTs the same signed bodies to the same receiver with the same
 * concurrency (10 subscriptions × `webhooks.max_concurrency_per_subscription`); then the delivery limit
 * (bench/signed-delivery-loop.ts), the same loop building and signing each body at send time and recording
 * each outcome in batches in SQLite. Prints deliveries/s of all three, the CPU time per delivery of each (the
 * platform's from /proc), the ratios, and emit-to-delivery latency (from before the emit request to the
 * receiver) under that load.
 *
 * The platform's rate is taken, like the bare loop's, with the work ready: over the backlog it still has when
 * emission stops (16 emitters as fast as they go outrun delivery), from the last emit to the last delivery.
 * While emitting, the same process also takes the emits, and the faster those get the more of the CPU they
 * take; that whole-run rate is printed too (`whole_run_per_s`). Without a backlog worth timing (a paced
 * `--rate` run) the whole-run rate is the figure.
 *
 *   npm run bench:webhooks                    # 6 s of emission (at most 15), bounded to about 30 s in all
 *   npm run bench:webhooks -- --duration 4 --json
 *   npm run bench:webhooks -- --rate 100      # a steady 100 events/s (1,000 deliveries/s): latency below the ceiling
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { spawnJsonChild } from './json-child.js';
import { ADMIN_PASSWORD, platformRuntime, startPlatformProcess } from './platform-process.js';
import { cpuSeconds } from './process-cpu.js';
import { signedDeliveryLoop } from './signed-delivery-loop.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' },
    subscriptions: { type: 'string', default: '10' },
    emitters: { type: 'string', default: '16' },
    // Events per second; 0 (default): as fast as the emitters go, which measures the ceiling.
    rate: { type: 'string', default: '0' },
    json: { type: 'boolean', default: false },
  },
});
const duration = Math.min(Number(values.duration), 15);
const subscriptions = Number(values.subscriptions);
const emitters = Number(values.emitters);
const rate = Number(values.rate);
// The platform's default per-subscription concurrency; the bare loop gets the same total.
const PER_SUBSCRIPTION = 4;
const concurrency = subscriptions * PER_SUBSCRIPTION;
const DRAIN_MS = 8000;
// Deliveries left after the last emit below which the drain is too short to time on its own.
const MIN_DRAINED = 2000;
const SECRET = 'bench-webhook-secret';

interface Stats {
  count: number;
  first: number;
  last: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  sample?: { headers: Record<string, string>; body: string };
}

const log = (line: string) => {
  if (!values.json) process.stdout.write(`${line}\n`);
};

const receiver = await spawnJsonChild<{ url: string }>('webhook-receiver.ts', []);
const runtime = platformRuntime();
const platform = await startPlatformProcess({
  runtime,
  env: {
    PLATFORM__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true',
    PLATFORM__WEBHOOKS__MAX_CONCURRENCY_PER_SUBSCRIPTION: String(PER_SUBSCRIPTION),
  },
});
const receiverUrl = receiver.first.url;
const stats = async (): Promise<Stats> => (await (await fetch(`${receiverUrl}/stats`)).json()) as Stats;

try {
  log(`platform: ${runtime.label}; receiver ${receiverUrl}`);
  const login = await fetch(`${platform.url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  for (let i = 0; i < subscriptions; i++) {
    const res = await fetch(`${platform.url}/api/v1/events/subscriptions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        name: `bench ${i}`,
        event_patterns: ['bench.delivery.*'],
        webhook_config: { url: `${receiverUrl}/hook/${i}`, secret: SECRET },
      }),
    });
    if (res.status !== 201) throw new Error(`subscription ${i}: ${res.status} ${await res.text()}`);
  }

  // --- the platform: emit for `duration` seconds, then wait for every delivery ---
  const api = new Pool(platform.url, { connections: emitters });
  let emitted = 0;
  let emitErrors = 0;
  const emitEnd = performance.now() + duration * 1000;
  const emitStart = performance.now();
  const cpuAtStart = cpuSeconds(platform.pid);
  let slot = 0;
  await Promise.all(
    Array.from({ length: emitters }, async () => {
      while (performance.now() < emitEnd) {
        if (rate > 0) {
          // Paced: each emit has its slot on a fixed schedule, so the load is steady.
          const due = emitStart + (slot++ * 1000) / rate;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          if (performance.now() >= emitEnd) break;
        }
        const res = await api.request({
          path: '/api/v1/events',
          method: 'POST',
          headers: auth,
          body: JSON.stringify({
            event_type: 'bench.delivery.created',
            source: 'bench',
            data: { sent_at: Date.now(), order_id: emitted, customer: 'c-42', total: 99.5 },
          }),
        });
        await res.body.dump();
        if (res.statusCode === 201) emitted += 1;
        else emitErrors += 1;
      }
    }),
  );
  const emitSeconds = (performance.now() - emitStart) / 1000;
  await api.close();
  // What had arrived when emission stopped: the backlog left is delivered with no emit competing for the CPU.
  const emitEndedAt = Date.now();
  const cpuAtEmitEnd = cpuSeconds(platform.pid);
  const atEmitEnd = await stats();
  const expected = emitted * subscriptions;
  const drainEnd = performance.now() + DRAIN_MS;
  let platformStats = await stats();
  while (platformStats.count < expected && performance.now() < drainEnd) {
    await new Promise((r) => setTimeout(r, 100));
    platformStats = await stats();
  }
  const cpuAtEnd = cpuSeconds(platform.pid);
  const platformSeconds = Math.max(0.001, (platformStats.last - platformStats.first) / 1000);
  const wholeRunRate = platformStats.count / platformSeconds;
  // The delivery rate proper (as the bare loop's, which has its bodies ready): the backlog cleared after the
  // last emit, when there was one worth timing; otherwise the whole run's rate.
  const drained = platformStats.count - atEmitEnd.count;
  const drainSeconds = (platformStats.last - emitEndedAt) / 1000;
  const drainRate = drained >= MIN_DRAINED && drainSeconds >= 1 ? drained / drainSeconds : null;
  const platformRate = drainRate ?? wholeRunRate;
  // The server's CPU time per delivery: over the backlog's drain when it was timed (deliveries only), else over
  // the whole run (which also took the emits).
  const cpuPerDeliveryUs =
    drainRate === null
      ? ((cpuAtEnd - cpuAtStart) * 1e6) / Math.max(1, platformStats.count)
      : ((cpuAtEnd - cpuAtEmitEnd) * 1e6) / Math.max(1, drained);
  log(
    `platform: ${emitted} events emitted in ${emitSeconds.toFixed(1)} s (${emitErrors} refused), ` +
      `${platformStats.count}/${expected} deliveries in ${platformSeconds.toFixed(2)} s ` +
      `(${Math.round(wholeRunRate)}/s); ` +
      (drainRate === null
        ? 'no backlog worth timing after the last emit'
        : `${drained} of them after the last emit, in ${drainSeconds.toFixed(2)} s (${Math.round(drainRate)}/s)`),
  );

  // --- the bare loop: the same signed body, the same receiver, the same concurrency ---
  const sample = platformStats.sample;
  if (!sample) throw new Error('no delivery reached the receiver');
  await fetch(`${receiverUrl}/reset`, { method: 'POST' });
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(sample.headers)) {
    if (!['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
  }
  const target = new Pool(receiverUrl, { connections: concurrency });
  const bareTotal = Math.max(1000, Math.min(platformStats.count, 60_000));
  let sent = 0;
  const bareStart = performance.now();
  const bareCpu = process.cpuUsage();
  const bareEnd = bareStart + 5000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < bareTotal && performance.now() < bareEnd) {
        sent += 1;
        const res = await target.request({ path: '/hook/0', method: 'POST', headers, body: sample.body });
        await res.body.dump();
      }
    }),
  );
  const bareSeconds = (performance.now() - bareStart) / 1000;
  const bareUsed = process.cpuUsage(bareCpu);
  const bareCpuPerDeliveryUs = (bareUsed.user + bareUsed.system) / Math.max(1, sent);
  await target.close();
  const bareRate = sent / bareSeconds;

  // --- the delivery limit: the same, each body built and signed at send time, its outcome recorded ---
  const limit = await signedDeliveryLoop({
    target: `${receiverUrl}/hook/0`,
    secret: SECRET,
    headers,
    dataJson: JSON.stringify((JSON.parse(sample.body) as { data: unknown }).data),
    concurrency,
    total: bareTotal,
    maxMs: 5000,
  });
  const limitRate = limit.sent / limit.seconds;

  const result = {
    subscriptions,
    concurrency,
    rate_events_per_s: rate > 0 ? rate : null,
    emit_seconds: Math.round(emitSeconds * 100) / 100,
    events_emitted: emitted,
    deliveries: platformStats.count,
    deliveries_expected: expected,
    deliveries_per_s: Math.round(platformRate),
    /** Deliveries/s over the whole run, emission included (the platform also took the emits meanwhile). */
    whole_run_per_s: Math.round(wholeRunRate),
    /** Deliveries made after the last emit, and over how long; null when too few to time. */
    drain_deliveries: drainRate === null ? null : drained,
    drain_seconds: drainRate === null ? null : Math.round(drainSeconds * 100) / 100,
    bare_per_s: Math.round(bareRate),
    /** The platform's CPU time per delivery (µs), and the bare loop's (this process, which runs it). */
    server_cpu_us: Math.round(cpuPerDeliveryUs),
    bare_cpu_us: Math.round(bareCpuPerDeliveryUs),
    ratio: Math.round((platformRate / bareRate) * 1000) / 1000,
    /** The delivery limit (bench/signed-delivery-loop.ts): signed at send time, outcomes recorded in batches. */
    limit_per_s: Math.round(limitRate),
    limit_cpu_us: limit.cpu_us,
    limit_ratio: Math.round((platformRate / limitRate) * 1000) / 1000,
    latency_p50_ms: platformStats.p50_ms,
    latency_p99_ms: platformStats.p99_ms,
    latency_max_ms: platformStats.max_ms,
    body_bytes: Buffer.byteLength(sample.body),
    runtime: runtime.label,
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    log('');
    log('| case | deliveries/s | CPU µs/delivery | of bare | emit→delivery p50 ms | p99 ms | max ms |');
    log('|---|---:|---:|---:|---:|---:|---:|');
    log(
      `| bare undici loop (${concurrency} connections) | ${result.bare_per_s} | ${result.bare_cpu_us} | 100 % | – | – | – |`,
    );
    log(
      `| delivery limit: signed at send time, outcomes recorded (${concurrency} connections) | ${result.limit_per_s} | ${result.limit_cpu_us} | ${Math.round((result.limit_per_s / result.bare_per_s) * 100)} % | – | – | – |`,
    );
    log(
      `| platform, ${subscriptions} subscriptions (sqlite)${drainRate === null ? '' : ', backlog after the last emit'} | ${result.deliveries_per_s} | ` +
        `${result.server_cpu_us} | ${Math.round(result.ratio * 100)} % | ${result.latency_p50_ms} | ${result.latency_p99_ms} | ${result.latency_max_ms} |`,
    );
    log('');
    log(
      `targets: ≥ 60 % of bare (${result.ratio >= 0.6 ? 'met' : 'not met'}), ` +
        `≥ 70 % of the limit (${Math.round(result.limit_ratio * 100)} %: ${result.limit_ratio >= 0.7 ? 'met' : 'not met'}), ≥ 3000 deliveries/s (${
          result.deliveries_per_s >= 3000 ? 'met' : 'not met'
        }); ${
          result.deliveries === expected
            ? 'every delivery made'
            : `${expected - result.deliveries} deliveries still queued when the ${DRAIN_MS / 1000} s drain window closed`
        }`,
    );
  }
} finally {
  await platform.stop();
  receiver.child.kill('SIGTERM');
  await receiver.exited;
}
