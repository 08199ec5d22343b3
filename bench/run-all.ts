/**
 * `npm run bench`: every benchmark in one run, each figure next to its baseline measured in the same run,
 * printed as one table (markdown). Progress goes to stderr.
 *
 *   npm run bench                      # everything, about 5 minutes
 *   npm run -s bench -- --json         # one JSON document on stdout instead of the table
 *   npm run bench -- --out results.json   # the table, and the JSON document in a file
 *   npm run bench -- --build           # compile dist/ first, so the built platform is measured
 *   npm run bench -- --only http,memory --duration 3
 *
 * Groups: http (request throughput, authentication cost), events (emit throughput, against a bare route and
 * against each database's durable-emit limit), fanout, webhooks (against a pre-signed bare loop and the
 * delivery limit),
 * latency (emit → webhook and stream receipt under steady load, bench/delivery-latency.ts), memory (start-up, idle memory, memory per WebSocket connection).
 * Only when asked (`--only features`, about 2.5 minutes more than the 5 of the rest): features (issue 25: what
 * an Idempotency-Key, a traceparent, a validated catalogue type and a rotated secret's second signature cost the
 * emit and delivery rates, against plain ones in alternating rounds of one platform process, bench/feature-cost.ts).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { runWebhookCases } from './delivery-cases.js';
import { runEmitCases, runFanoutCase } from './event-cases.js';
import { runFeatureCases } from './feature-cases.js';
import { runHttpCases } from './http-cases.js';
import { runLatencyCases } from './latency-cases.js';
import { runStartupAndMemoryCases } from './memory-cases.js';
import { platformRuntime } from './platform-process.js';
import { notMeasured, type ResultRow } from './result-row.js';
import { resultTable } from './result-table.js';

const ROOT = resolve(import.meta.dirname, '..');
const GROUPS = ['http', 'events', 'fanout', 'webhooks', 'latency', 'memory', 'features'] as const;
type Group = (typeof GROUPS)[number];
// Left out of the default run, which takes about 5 minutes without them.
const ON_REQUEST: readonly Group[] = ['features'];

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    // Writes the JSON document to this file as well (the table still goes to stdout).
    out: { type: 'string' },
    // Compiles src/ into dist/ first (tsc -p tsconfig.build.json), so the built platform is what is measured.
    build: { type: 'boolean', default: false },
    only: { type: 'string' },
    // Seconds of measured load per HTTP and emit case (each also has a 1 s warm-up); at most 10.
    duration: { type: 'string', default: '4' },
    'ws-connections': { type: 'string', default: '10000' },
    'fanout-ws': { type: 'string', default: '1000' },
    'fanout-sse': { type: 'string', default: '1000' },
    'fanout-rate': { type: 'string', default: '1000' },
    'fanout-duration': { type: 'string', default: '3' },
    // Seconds per delivery latency case (bench/delivery-latency.ts: 8 runs of this length, plus start-ups).
    'latency-duration': { type: 'string', default: '8' },
    // Alternating rounds per variant of the features group, and seconds per emit round (1–10).
    'feature-rounds': { type: 'string', default: '6' },
    'feature-round-seconds': { type: 'string', default: '3' },
  },
});
const only = values.only
  ? values.only.split(',').map((g) => g.trim())
  : GROUPS.filter((g) => !ON_REQUEST.includes(g));
const unknown = only.filter((g) => !(GROUPS as readonly string[]).includes(g));
if (unknown.length > 0) {
  process.stderr.write(`unknown group(s) ${unknown.join(', ')}; groups: ${GROUPS.join(', ')}\n`);
  process.exit(2);
}
const duration = Math.max(1, Math.min(Number(values.duration), 10));
const connections = 64;
const log = (line: string) => process.stderr.write(`${line}\n`);

if (values.build) {
  log('compiling src/ into dist/ (tsc -p tsconfig.build.json), then bundling it (scripts/bundle.mjs)');
  // Type errors (of work in progress elsewhere) do not stop the emit.
  spawnSync(
    process.execPath,
    [resolve(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  // The bundle is what runs (dist/platform/main.js): without it the run would measure an older build.
  const bundled = spawnSync(process.execPath, [resolve(ROOT, 'scripts/bundle.mjs')], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (bundled.status !== 0) {
    log('bundling failed; nothing was measured');
    process.exit(1);
  }
  process.env.PLATFORM_BENCH_JUST_BUILT = '1';
}
const runtime = platformRuntime({ justBuilt: values.build });
const startedAt = new Date();
const loadBefore = loadavg();
const started = performance.now();
log(`platform runs from ${runtime.label}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`);

/** A group that fails is reported as not measured, with its error, and the others still run. */
const groups: Record<Group, { figures: string[]; run: () => Promise<ResultRow[]> }> = {
  http: {
    figures: ['GET /api/v1/status', 'GET /api/v1/events list', 'JWT overhead', 'API-key overhead'],
    run: () => runHttpCases({ runtime, duration, connections, log }),
  },
  events: {
    figures: ['emit throughput'],
    run: () => runEmitCases({ duration, log }),
  },
  fanout: {
    figures: ['fan-out latency'],
    // The size, then a tenth of it (clients and rate): what this host carries below saturation. Each
    // size runs the platform, then the bare broadcaster (bench/bare-fanout-server.ts), its baseline.
    run: async () => {
      const ws = Number(values['fanout-ws']);
      const sse = Number(values['fanout-sse']);
      const rate = Number(values['fanout-rate']);
      const duration = Math.min(Number(values['fanout-duration']), 10);
      const full = await runFanoutCase({ ws, sse, rate, duration, log });
      const tenth = (n: number) => Math.max(1, Math.round(n / 10));
      const small = await runFanoutCase({
        ws: tenth(ws),
        sse: tenth(sse),
        rate: tenth(rate),
        duration,
        id: 'fanout_tenth',
        log,
      });
      return [...full, ...small];
    },
  },

  webhooks: {
    figures: ['webhook deliveries/s'],
    run: () => runWebhookCases({ duration, log }),
  },
  latency: {
    figures: ['webhook and stream delivery latency'],
    run: () =>
      runLatencyCases({ duration: Math.max(1, Math.min(Number(values['latency-duration']), 15)), log }),
  },
  memory: {
    figures: ['start-up', 'idle memory', 'memory per WebSocket connection'],
    run: () => runStartupAndMemoryCases({ runtime, connections: Number(values['ws-connections']), log }),
  },
  features: {
    figures: ['cost of the Idempotency-Key, traceparent, catalogue and rotation features'],
    run: () =>
      runFeatureCases({
        rounds: Number(values['feature-rounds']),
        roundSeconds: Number(values['feature-round-seconds']),
        log,
      }),
  },
};

const rows: ResultRow[] = [];
for (const group of GROUPS) {
  if (!only.includes(group)) continue;
  log(`${group} (at ${Math.round((performance.now() - started) / 1000)} s):`);
  try {
    rows.push(...(await groups[group].run()));
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
    log(`  failed: ${message}`);
    rows.push(
      notMeasured(`${group}.failed`, groups[group].figures.join(', '), '', null, `failed: ${message}`),
    );
  }
}

const seconds = Math.round((performance.now() - started) / 1000);
const loadAfter = loadavg();
const machine = {
  cpus: cpus().length,
  cpu_model: cpus()[0]?.model ?? 'unknown',
  memory_gib: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
};
const document = `${JSON.stringify(
  {
    started_at: startedAt.toISOString(),
    duration_seconds: seconds,
    machine,
    load_average: { before: loadBefore, after: loadAfter },
    platform_runtime: runtime.label,
    settings: { duration_seconds_per_case: duration, connections, groups: only },
    rows,
  },
  null,
  2,
)}\n`;
if (values.out) writeFileSync(values.out, document);
if (values.json) {
  process.stdout.write(document);
} else {
  process.stdout.write(
    `\n${machine.cpus} × ${machine.cpu_model}, ${machine.memory_gib} GiB, Node ${machine.node}; ` +
      `load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ` +
      `${loadAfter.map((l) => l.toFixed(2)).join(' ')} after; platform from ${runtime.label}; ${seconds} s\n\n` +
      `${resultTable(rows)}\n`,
  );
}
