/**
 * Webhook deliveries per second against a bare undici loop, taken by the webhook module's own script
 * (bench/webhook-throughput.ts: the platform and a keep-alive receiver in processes of their own).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { runToEnd } from './json-child.js';
import { notMeasured, type ResultRow, row } from './result-row.js';

const SCRIPT = 'webhook-throughput.ts';

interface WebhookResult {
  subscriptions: number;
  concurrency: number;
  events_emitted: number;
  deliveries: number;
  deliveries_expected: number;
  deliveries_per_s: number;
  whole_run_per_s: number;
  drain_deliveries: number | null;
  drain_seconds: number | null;
  bare_per_s: number;
  server_cpu_us: number;
  bare_cpu_us: number;
  limit_per_s: number;
  limit_cpu_us: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
}

export async function runWebhookCases(options: {
  duration: number;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  const id = 'webhooks.deliveries_per_s';
  const figure = 'webhook deliveries/s (SQLite)';
  const target = '≥ 60 % of bare';
  if (!existsSync(resolve(import.meta.dirname, SCRIPT)))
    return [notMeasured(id, figure, 'deliveries/s', target, `not measured: bench/${SCRIPT} is missing`)];
  options.log(`  bench/${SCRIPT}: ${options.duration} s of emission, then the bare loop`);
  const { code, lines } = await runToEnd(SCRIPT, ['--duration', String(options.duration), '--json']);
  const line = lines.filter((l) => l.startsWith('{')).at(-1);
  if (code !== 0 || !line) throw new Error(`${SCRIPT} exited with ${code}`);
  const r = JSON.parse(line) as WebhookResult;
  const made = `${r.subscriptions} subscriptions, ${r.events_emitted} events, ${r.deliveries} of ${r.deliveries_expected} deliveries made`;
  return [
    row({
      id,
      figure,
      value: r.deliveries_per_s,
      unit: 'deliveries/s',
      baseline: { label: `bare undici loop, ${r.concurrency} connections`, value: r.bare_per_s },
      target,
      check: (_, ratio) => ratio !== null && ratio >= 0.6,
      note:
        `server CPU ${r.server_cpu_us} µs per delivery (bare loop ${r.bare_cpu_us} µs); ${made}; ` +
        (r.drain_deliveries === null
          ? 'rate over the whole run'
          : `rate over the ${r.drain_deliveries} made after the last emit (${r.drain_seconds} s); ` +
            `over the whole run, emits included, ${r.whole_run_per_s}/s`) +
        `; emit→delivery p50/p99 ${r.latency_p50_ms}/${r.latency_p99_ms} ms`,
    }),
    row({
      id: `${id}_limit`,
      figure: `${figure}, of the delivery limit`,
      value: r.deliveries_per_s,
      unit: 'deliveries/s',
      baseline: {
        label: `bare undici loop signing each body (both schemes) and recording each outcome in batches, ${r.concurrency} connections`,
        value: r.limit_per_s,
      },
      target: '≥ 70 % of the limit',
      check: (_, ratio) => ratio !== null && ratio >= 0.7,
      note: `server CPU ${r.server_cpu_us} µs per delivery (limit loop ${r.limit_cpu_us} µs); ${made}`,
    }),
  ];
}
