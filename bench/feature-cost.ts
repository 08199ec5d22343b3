/**
 * What issue 25's features cost the emit and delivery rates, measured as a difference within one run and one
 * platform process: `platform serve` on SQLite (the build, as the other benchmarks run it) is loaded in short
 * rounds that alternate between variants — each round in another order of them, so that each variant comes
 * first, last and after each other one equally often — and each variant is compared with the plain one of its
 * block. Comparing two builds one after the other varied by more than 20 % on this shared host
 * (docs/performance.md).
 *
 * Emits (POST /api/v1/events, `--connections` keep-alive clients of undici in this process), in two blocks:
 *   plain        no Idempotency-Key, no traceparent, a type not in the catalogue (the reference)
 *   trace        a traceparent header
 *   typed        a type registered in the catalogue with a small JSON Schema, so `data` is validated
 * then
 *   plain        again, the reference of this block
 *   key          a unique Idempotency-Key per request
 *   all          the three together
 * Deliveries (to bench/webhook-receiver.ts, its own process): each round emits `--delivery-events` events of a
 * type that `--subscriptions` subscriptions take, then times the backlog left when the emits are answered:
 *   single       subscriptions with one signing secret (the reference)
 *   rotated      subscriptions whose secret was just rotated: every delivery carries two signatures
 * Per round: the rate, and the server's CPU time per operation from /proc (over the round for emits, over the
 * backlog for deliveries). Every loop is bounded in time.
 *
 *   npm run bench:features                                     # 6 rounds of 3 s per emit variant; about 3 min
 *   npx tsx bench/feature-cost.ts --rounds 2 --round-seconds 1 # a quick look
 *   npx tsx bench/feature-cost.ts --sides emit --variants trace  # one block, one variant against plain
 *   npm run bench -- --only features                           # the same, as rows of the bench's table
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { featureRows, type Variant } from './feature-cases.js';
import { spawnJsonChild } from './json-child.js';
import { adminToken, platformRuntime, startPlatformProcess } from './platform-process.js';
import { cpuSeconds } from './process-cpu.js';
import { resultTable } from './result-table.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    // Seconds of load per emit round (each variant gets one round per round), 1–10.
    'round-seconds': { type: 'string', default: '3' },
    connections: { type: 'string', default: '64' },
    // Events emitted per delivery round; each goes to every subscription of the round's variant.
    'delivery-events': { type: 'string', default: '1000' },
    subscriptions: { type: 'string', default: '10' },
    // `emit`, `delivery` or both (default): the other side's variants are then left out.
    sides: { type: 'string', default: 'emit,delivery' },
    // Some emit variants only (key, trace, typed, all; plain, the reference, always runs), e.g. under --cpu-prof.
    variants: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const rounds = Math.max(1, Math.min(Number(values.rounds), 12));
const roundSeconds = Math.max(1, Math.min(Number(values['round-seconds']), 10));
const connections = Number(values.connections);
const deliveryEvents = Math.max(100, Math.min(Number(values['delivery-events']), 5000));
const subscriptions = Math.max(1, Math.min(Number(values.subscriptions), 20));
const sides = values.sides.split(',').map((s) => s.trim());
// The platform's default per-subscription concurrency, as in bench/webhook-throughput.ts.
const PER_SUBSCRIPTION = 4;
const EMITTERS = 16;
// Bounds of a delivery round: its emits, then the wait for its last delivery.
const EMIT_MAX_MS = 10_000;
const DRAIN_MAX_MS = 20_000;
// After the last delivery, so that its outcome's recording falls in the round that caused it.
const SETTLE_MS = 250;
// Load per emit variant before its block's rounds.
const WARM_UP_S = 3;
// Between emit rounds: how long to wait at most for the server to go idle.
const QUIET_MAX_MS = 5_000;
const SECRET = 'bench-webhook-secret';
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

const log = (line: string) => process.stderr.write(`${line}\n`);

// Same length, so every body has the same size: the plain type is not in the catalogue, the typed one is.
const PLAIN_TYPE = 'bench.order.plain';
const TYPED_TYPE = 'bench.order.typed';
const data = { order_id: 12345, customer: 'c-42', total: 99.5, items: [{ sku: 'A1', qty: 2 }] };
const body = (eventType: string) =>
  JSON.stringify({ event_type: eventType, source: 'bench', data, priority: 5 });
const TYPED_SCHEMA = {
  type: 'object',
  required: ['order_id', 'customer', 'total', 'items'],
  properties: {
    order_id: { type: 'integer' },
    customer: { type: 'string', maxLength: 64 },
    total: { type: 'number', minimum: 0 },
    items: {
      type: 'array',
      items: {
        type: 'object',
        required: ['sku', 'qty'],
        properties: { sku: { type: 'string' }, qty: { type: 'integer', minimum: 1 } },
      },
    },
  },
};

interface EmitVariant {
  name: string;
  label: string;
  headers: Record<string, string>;
  body: string;
}

// A keyed variant's key is replaced by a new one in every request (load()).
const variant = (name: string, label: string, headers: Record<string, string>, eventType: string) => ({
  name,
  label,
  headers,
  body: body(eventType),
});
const KEY = { 'idempotency-key': 'set per request' };
const TRACE = { traceparent: TRACEPARENT };
/**
 * Two blocks, each with its own plain rounds. A keyed emit writes its key in two commits of its own, each synced
 * to disk on SQLite. In trial runs with the keyed variants in the same rotation as the others (and an earlier
 * load loop, which left keyed requests being served into the next round), every variant measured 200–450 µs of
 * server CPU per emit; without them, 95–165 µs. So the variants whose cost is a few µs are compared among
 * themselves, and the keyed ones in a block of their own.
 */
const EMIT_BLOCKS: EmitVariant[][] = [
  [
    variant('plain', 'emit plain (no key, no traceparent, type not in the catalogue)', {}, PLAIN_TYPE),
    variant('trace', 'emit with a traceparent header', TRACE, PLAIN_TYPE),
    variant('typed', 'emit of a catalogue type with a JSON Schema (validated)', {}, TYPED_TYPE),
  ],
  [
    variant('plain_keyed_block', 'emit plain, in the block of the keyed emits', {}, PLAIN_TYPE),
    variant('key', 'emit with a unique Idempotency-Key', KEY, PLAIN_TYPE),
    variant(
      'all',
      'emit with key, traceparent and a validated catalogue type',
      { ...KEY, ...TRACE },
      TYPED_TYPE,
    ),
  ],
];

const DELIVERY_VARIANTS = [
  { name: 'single', label: 'deliveries, one signing secret', type: 'bench.single.created' },
  {
    name: 'rotated',
    label: 'deliveries, secret just rotated (two signatures)',
    type: 'bench.rotate.created',
  },
] as const;

interface Load {
  ok: number;
  refused: number;
  errors: number;
  seconds: number;
}

interface EmitRound {
  rate: number;
  /** Emits answered 201 (the CPU is divided by these). */
  ok: number;
  cpu_us: number | null;
  non2xx: number;
  errors: number;
}

interface DeliveryRound {
  /** Deliveries/s over the backlog left when the round's emits were answered. */
  rate: number;
  /** Server CPU µs per delivery over that backlog. */
  cpu_us: number;
  /** Deliveries/s and CPU µs per delivery over the whole round, its emits included. */
  whole_rate: number;
  whole_cpu_us: number;
  drained: number;
  delivered: number;
  expected: number;
  double_signed: number;
}

/**
 * Every order of the variants, taken in turn by the rounds: over 6 rounds of 3 variants (2 of 2) each variant
 * comes first, second and last equally often, and after each of the others equally often.
 */
const permutations = <T>(list: readonly T[]): T[][] =>
  list.length <= 1
    ? [[...list]]
    : list.flatMap((first, i) =>
        permutations([...list.slice(0, i), ...list.slice(i + 1)]).map((rest) => [first, ...rest]),
      );
const roundOrder = <T>(list: readonly T[], round: number): T[] => {
  const all = permutations(list);
  return all[round % all.length]!;
};

const receiver = await spawnJsonChild<{ url: string }>('webhook-receiver.ts', []);
const receiverUrl = receiver.first.url;
const runtime = platformRuntime();
const platform = await startPlatformProcess({
  runtime,
  env: {
    PLATFORM__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true',
    PLATFORM__WEBHOOKS__MAX_CONCURRENCY_PER_SUBSCRIPTION: String(PER_SUBSCRIPTION),
  },
});
const loadBefore = loadavg();
const started = performance.now();

async function call(method: string, path: string, token: string, json?: unknown): Promise<unknown> {
  const res = await fetch(`${platform.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as unknown;
}

/** Checks that each variant does what it says, once, before anything is measured. */
async function checkVariants(token: string): Promise<void> {
  await call('PUT', `/api/v1/events/types/${TYPED_TYPE}`, token, {
    description: 'bench: a validated type',
    schema: TYPED_SCHEMA,
  });
  const refused = await fetch(`${platform.url}/api/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ event_type: TYPED_TYPE, source: 'bench', data: { ...data, total: 'x' } }),
  });
  await refused.body?.cancel();
  if (refused.status !== 422)
    throw new Error(`the typed variant's schema is not applied (${refused.status})`);
  const res = await fetch(`${platform.url}/api/v1/events`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      traceparent: TRACEPARENT,
    },
    body: body(PLAIN_TYPE),
  });
  const { event_id } = ((await res.json()) as { data: { event: { event_id: string } } }).data.event;
  const stored = (await call('GET', `/api/v1/events/${event_id}`, token)) as {
    data: { event: { metadata?: { trace_id?: string } } };
  };
  if (stored.data.event.metadata?.trace_id !== TRACE_ID)
    throw new Error('the traceparent header was not kept');
  const keyed = async () =>
    fetch(`${platform.url}/api/v1/events`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': 'bench-check',
      },
      body: body(PLAIN_TYPE),
    });
  await (await keyed()).body?.cancel();
  const replay = await keyed();
  await replay.body?.cancel();
  if (replay.headers.get('idempotent-replayed') !== 'true')
    throw new Error('the Idempotency-Key was not kept');
}

let keyCounter = 0;
const RUN_ID = `${process.pid}-${Date.now()}`;

/**
 * `clients` keep-alive connections, each sending its next emit when the last is answered, for `seconds`; then
 * every request under way is awaited, so that nothing a round sent is still being served in the next one (an
 * emit that syncs its key to disk can take tens of ms on this host). The rate is over the round's whole time.
 */
async function load(variant: EmitVariant, token: string, seconds: number, clients: number): Promise<Load> {
  const pool = new Pool(platform.url, { connections: clients });
  const fixed = { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...variant.headers };
  const keyed = 'idempotency-key' in variant.headers;
  let ok = 0;
  let refused = 0;
  let errors = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  try {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < end) {
          // Every variant builds its headers per request, so the client does the same work for all.
          const headers: Record<string, string> = { ...fixed };
          if (keyed) headers['idempotency-key'] = `bench-${RUN_ID}-${++keyCounter}`;
          try {
            const res = await pool.request({
              path: '/api/v1/events',
              method: 'POST',
              headers,
              body: variant.body,
            });
            await res.body.dump();
            if (res.statusCode === 201) ok += 1;
            else refused += 1;
          } catch {
            errors += 1;
          }
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return { ok, refused, errors, seconds: (performance.now() - started) / 1000 };
}

/**
 * Waits (at most QUIET_MAX_MS) until the server has used less than a fifth of a core over 100 ms: what a round
 * left behind (requests its clients gave up on at its end, slow ones with synced writes of their own) must not
 * fall into the next round, another variant's.
 */
async function quiet(): Promise<void> {
  const deadline = performance.now() + QUIET_MAX_MS;
  let before = cpuSeconds(platform.pid);
  while (performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    const now = cpuSeconds(platform.pid);
    if (now - before < 0.02) return;
    before = now;
  }
}

/** One block's rounds: each variant once per round, in the round's order, the server idle between rounds. */
async function emitBlock(token: string, variants: EmitVariant[]): Promise<Variant[]> {
  log(`  emits (${variants.map((v) => v.name).join(', ')}): warm-up, ${WARM_UP_S} s of each`);
  const warmUp = new Map<string, number>();
  for (const v of variants) {
    warmUp.set(v.name, (await load(v, token, WARM_UP_S, connections)).ok);
    await quiet();
  }
  const results = new Map(variants.map((v) => [v.name, [] as EmitRound[]]));
  for (let round = 0; round < rounds; round++) {
    for (const v of roundOrder(variants, round)) {
      const before = cpuSeconds(platform.pid);
      const r = await load(v, token, roundSeconds, connections);
      const used = cpuSeconds(platform.pid) - before;
      await quiet();
      results.get(v.name)!.push({
        rate: r.ok / r.seconds,
        ok: r.ok,
        cpu_us: r.ok === 0 ? null : (used * 1e6) / r.ok,
        non2xx: r.refused,
        errors: r.errors,
      });
    }
    const line = variants.map((v) => {
      const last = results.get(v.name)!.at(-1)!;
      return `${v.name} ${Math.round(last.rate)}/s ${last.cpu_us === null ? '–' : Math.round(last.cpu_us)} µs`;
    });
    log(`  emit round ${round + 1}/${rounds}: ${line.join(', ')}`);
  }
  return variants.map((v) => ({
    name: v.name,
    label: v.label,
    warm_up_ok: warmUp.get(v.name) ?? 0,
    rounds: results.get(v.name)!,
  }));
}

/** The blocks asked for (`--variants`; a block's plain variant always runs with it). */
async function emitRounds(token: string): Promise<Variant[][]> {
  const chosen = values.variants?.split(',').map((v) => v.trim());
  const blocks = EMIT_BLOCKS.map((block) =>
    chosen ? block.filter((v, i) => i === 0 || chosen.includes(v.name)) : block,
  ).filter((block) => block.length > 1);
  const measured: Variant[][] = [];
  for (const block of blocks) measured.push(await emitBlock(token, block));
  return measured;
}

interface Count {
  count: number;
  last: number;
  double_signed: number;
}

const count = async (): Promise<Count> => (await (await fetch(`${receiverUrl}/count`)).json()) as Count;

async function deliveryRound(api: Pool, token: string, type: string): Promise<DeliveryRound> {
  await (await fetch(`${receiverUrl}/reset`, { method: 'POST' })).body?.cancel();
  const emitBody = JSON.stringify({ event_type: type, source: 'bench', data, priority: 5 });
  const cpuStart = cpuSeconds(platform.pid);
  const start = Date.now();
  let sent = 0;
  let emitted = 0;
  const emitDeadline = performance.now() + EMIT_MAX_MS;
  await Promise.all(
    Array.from({ length: EMITTERS }, async () => {
      while (sent < deliveryEvents && performance.now() < emitDeadline) {
        sent += 1;
        const res = await api.request({
          path: '/api/v1/events',
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: emitBody,
        });
        await res.body.dump();
        if (res.statusCode === 201) emitted += 1;
      }
    }),
  );
  const emitEnd = Date.now();
  const cpuEmitEnd = cpuSeconds(platform.pid);
  const atEmitEnd = await count();
  const expected = emitted * subscriptions;
  const drainDeadline = performance.now() + DRAIN_MAX_MS;
  let now = atEmitEnd;
  while (now.count < expected && performance.now() < drainDeadline) {
    await new Promise((r) => setTimeout(r, 50));
    now = await count();
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const cpuEnd = cpuSeconds(platform.pid);
  now = await count();
  const drained = now.count - atEmitEnd.count;
  const drainSeconds = Math.max(0.001, (now.last - emitEnd) / 1000);
  return {
    rate: drained / drainSeconds,
    cpu_us: ((cpuEnd - cpuEmitEnd) * 1e6) / Math.max(1, drained),
    whole_rate: now.count / Math.max(0.001, (now.last - start) / 1000),
    whole_cpu_us: ((cpuEnd - cpuStart) * 1e6) / Math.max(1, now.count),
    drained,
    delivered: now.count,
    expected,
    double_signed: now.double_signed,
  };
}

async function deliveryRounds(token: string): Promise<Map<string, DeliveryRound[]>> {
  for (const variant of DELIVERY_VARIANTS) {
    const prefix = variant.type.split('.').slice(0, 2).join('.');
    for (let i = 0; i < subscriptions; i++) {
      const created = (await call('POST', '/api/v1/events/subscriptions', token, {
        name: `bench ${variant.name} ${i}`,
        event_patterns: [`${prefix}.*`],
        webhook_config: { url: `${receiverUrl}/hook/${variant.name}/${i}`, secret: SECRET },
      })) as { data: { subscription: { subscription_id: string } } };
      if (variant.name === 'rotated') {
        const id = created.data.subscription.subscription_id;
        await call('POST', `/api/v1/events/subscriptions/${id}/secret/rotate`, token, {
          secret: `${SECRET}-next`,
          overlap_hours: 24,
        });
      }
    }
  }
  const api = new Pool(platform.url, { connections: EMITTERS });
  try {
    log(`  deliveries: warm-up, one round of each variant`);
    for (const variant of DELIVERY_VARIANTS) {
      const r = await deliveryRound(api, token, variant.type);
      const want = variant.name === 'rotated' ? r.delivered : 0;
      if (r.delivered === 0 || r.double_signed !== want)
        throw new Error(
          `${variant.name}: ${r.delivered} deliveries, ${r.double_signed} with two signatures (expected ${want})`,
        );
    }
    const results = new Map(DELIVERY_VARIANTS.map((v) => [v.name as string, [] as DeliveryRound[]]));
    for (let round = 0; round < rounds; round++) {
      for (const variant of roundOrder(DELIVERY_VARIANTS, round)) {
        results.get(variant.name)!.push(await deliveryRound(api, token, variant.type));
      }
      const line = DELIVERY_VARIANTS.map((v) => {
        const last = results.get(v.name)!.at(-1)!;
        return `${v.name} ${Math.round(last.rate)}/s ${Math.round(last.cpu_us)} µs (${last.delivered}/${last.expected})`;
      });
      log(`  delivery round ${round + 1}/${rounds}: ${line.join(', ')}`);
    }
    return results;
  } finally {
    await api.close();
  }
}

try {
  log(`  platform: ${runtime.label}; receiver ${receiverUrl}`);
  const token = await adminToken(platform.url);
  await checkVariants(token);
  const emits = sides.includes('emit') ? await emitRounds(token) : [];
  const deliveries = sides.includes('delivery')
    ? await deliveryRounds(token)
    : new Map<string, DeliveryRound[]>();
  const result = {
    settings: {
      rounds,
      round_seconds: roundSeconds,
      connections,
      delivery_events: deliveryEvents,
      subscriptions,
      concurrency_per_subscription: PER_SUBSCRIPTION,
      emitters: EMITTERS,
      body_bytes: body(PLAIN_TYPE).length,
    },
    runtime: runtime.label,
    load_average: { before: loadBefore, after: loadavg() },
    seconds: Math.round((performance.now() - started) / 1000),
    emit_blocks: emits,
    delivery: DELIVERY_VARIANTS.filter((v) => deliveries.has(v.name)).map((v) => ({
      name: v.name,
      label: v.label,
      rounds: deliveries.get(v.name)!,
    })),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else
    process.stdout.write(
      `\nload average ${result.load_average.before.map((l) => l.toFixed(2)).join(' ')} before, ` +
        `${result.load_average.after.map((l) => l.toFixed(2)).join(' ')} after; platform from ${runtime.label}; ` +
        `${result.seconds} s\n\n${resultTable(featureRows(result))}\n`,
    );
} finally {
  await platform.stop();
  receiver.child.kill('SIGTERM');
  await receiver.exited;
}
