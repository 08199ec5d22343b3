/**
 * The event figures, taken by the event module's own scripts in child processes (each starts its servers in
 * processes of their own): emit throughput against a bare route (bench/emit-throughput.ts) and fan-out
 * latency to WebSocket and SSE subscribers (bench/fanout-latency.ts), each size against the platform and,
 * right after it, against a bare node:http + ws broadcaster (bench/bare-fanout-server.ts).
 */
import { runToEnd } from './json-child.js';
import { notMeasured, type ResultRow, row } from './result-row.js';

interface EmitRow {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  cpu_us: number | null;
}

interface FanoutResult {
  ws: number;
  sse: number;
  rate: number;
  duration: number;
  emitted: number;
  delivered: number;
  expected: number;
  p50_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
  answered_in_time: number;
  server_offer_p50_ms: number;
  server_offer_p99_ms: number;
  events_per_flush: number;
  server_cpu: number;
  /** The server's CPU time per emitted event (taking it and sending it to every client), µs. */
  server_cpu_us_per_event: number | null;
  client_cpu: number;
}

const lastJson = <T>(lines: string[]): T | undefined => {
  const line = lines.filter((l) => l.startsWith('{')).at(-1);
  return line ? (JSON.parse(line) as T) : undefined;
};

export async function runEmitCases(options: {
  duration: number;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  options.log('  bench/emit-throughput.ts: bare, limit-sqlite, sqlite, limit-postgres, postgres');
  const { code, lines } = await runToEnd('emit-throughput.ts', [
    '--duration',
    String(options.duration),
    '--json',
  ]);
  const result = lastJson<{ rows: EmitRow[] }>(lines);
  if (code !== 0 || !result) throw new Error(`emit-throughput.ts exited with ${code}`);
  const bare = result.rows.find((r) => r.name === 'bare fastify route');
  return (['sqlite', 'postgres'] as const).flatMap((mode) => {
    const id = `events.emit_${mode}`;
    const database = mode === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    const figure = `POST /api/v1/events, ${database}`;
    const measured = result.rows.find((r) => r.name === `platform (${mode})`);
    const limit = result.rows.find((r) => r.name === `durable-emit limit (${mode})`);
    const limitFigure = `${figure}, of the durable-emit limit`;
    const limitTarget = '≥ 70 % of the limit';
    if (!measured)
      return [
        notMeasured(id, figure, 'events/s', '≥ 50 % of bare', `${mode} case did not run`),
        notMeasured(`${id}_limit`, limitFigure, 'events/s', limitTarget, `${mode} case did not run`),
      ];
    const cpu = (r: EmitRow) => `${r.cpu_us ?? '–'} µs`;
    const answered =
      `p50/p99 ${measured.p50}/${measured.p99} ms; ${measured.non2xx} non-2xx, ${measured.errors} errors` +
      (measured.non2xx + measured.errors > 0 ? ' (the rate counts only what was answered)' : '');
    return [
      bare
        ? row({
            id,
            figure,
            value: measured.rps,
            unit: 'events/s',
            baseline: { label: 'bare Fastify route parsing the body', value: bare.rps },
            target: '≥ 50 % of bare',
            check: (_, ratio) => ratio !== null && ratio >= 0.5,
            note: `server CPU ${cpu(measured)} per event (bare ${cpu(bare)}); ${answered}`,
          })
        : notMeasured(id, figure, 'events/s', '≥ 50 % of bare', 'bare case did not run'),
      limit
        ? row({
            id: `${id}_limit`,
            figure: limitFigure,
            value: measured.rps,
            unit: 'events/s',
            baseline: {
              label: `bare Fastify route writing the same event row, batched, ${mode === 'sqlite' ? 'WAL + synchronous=FULL' : 'PostgreSQL'}`,
              value: limit.rps,
            },
            target: limitTarget,
            check: (_, ratio) => ratio !== null && ratio >= 0.7,
            note:
              `server CPU ${cpu(measured)} per event (limit ${cpu(limit)}); limit p50/p99 ${limit.p50}/${limit.p99} ms, ` +
              `${limit.non2xx} non-2xx, ${limit.errors} errors; no subscription on either side`,
          })
        : notMeasured(`${id}_limit`, limitFigure, 'events/s', limitTarget, `limit-${mode} case did not run`),
    ];
  });
}

/** One run of bench/fanout-latency.ts against the platform (`sqlite`) or the bare broadcaster (`bare`). */
async function runFanout(
  options: { ws: number; sse: number; rate: number; duration: number },
  mode: 'sqlite' | 'bare',
): Promise<FanoutResult> {
  const { code, lines } = await runToEnd('fanout-latency.ts', [
    '--ws',
    String(options.ws),
    '--sse',
    String(options.sse),
    '--rate',
    String(options.rate),
    '--duration',
    String(options.duration),
    '--mode',
    mode,
    '--json',
  ]);
  const r = lastJson<FanoutResult>(lines);
  if (code !== 0 || !r) throw new Error(`fanout-latency.ts --mode ${mode} exited with ${code}`);
  return r;
}

const BARE_FANOUT = 'bare node:http + ws broadcaster';

/**
 * The fan-out latency at one size: the platform, then right after it, on the same host with the same clients
 * and emitter, the bare broadcaster (bench/bare-fanout-server.ts) as its baseline.
 */
export async function runFanoutCase(options: {
  ws: number;
  sse: number;
  rate: number;
  duration: number;
  /** Prefix of the rows' ids (default `fanout`). */
  id?: string;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  const label = `${options.ws} WS + ${options.sse} SSE at ${options.rate} events/s`;
  options.log(`  bench/fanout-latency.ts: ${label} for ${options.duration} s, the platform then bare`);
  const r = await runFanout(options, 'sqlite');
  let bare: FanoutResult | undefined;
  let bareFailed = '';
  try {
    bare = await runFanout(options, 'bare');
  } catch (err) {
    bareFailed = err instanceof Error ? err.message : String(err);
    options.log(`  bare case failed: ${bareFailed}`);
  }
  const complete = r.delivered === r.expected;
  const bareComplete = bare !== undefined && bare.delivered === bare.expected;
  const baseline = (value: number | null | undefined) =>
    value === null || value === undefined ? null : { label: BARE_FANOUT, value };
  const bareNote = bare
    ? `; bare: ${bare.emitted} emitted (${bare.answered_in_time} answered in time), ` +
      `${bare.delivered} of ${bare.expected} received` +
      (bareComplete ? '' : ' (its percentiles cover only what arrived)')
    : `; bare case did not run (${bareFailed})`;
  const bareDetail = bare
    ? `; bare: max ${bare.max_ms === null ? '–' : Math.round(bare.max_ms)} ms, ${server(bare, 'emit')}`
    : '';
  const key = options.id ?? 'fanout';
  return [
    row({
      id: `${key}.p50_ms`,
      figure: `fan-out latency p50, ${label}`,
      value: r.p50_ms,
      unit: 'ms',
      baseline: baseline(bare?.p50_ms),
      target: null,
      note: `${delivery(r)}${complete ? '' : ': the percentiles cover only what arrived'}${bareNote}`,
    }),
    row({
      id: `${key}.p99_ms`,
      figure: `fan-out latency p99, ${label}`,
      value: r.p99_ms,
      unit: 'ms',
      baseline: baseline(bare?.p99_ms),
      target: '≤ 50 ms',
      check: (value) => complete && value <= 50,
      note: `max ${r.max_ms === null ? '–' : Math.round(r.max_ms)} ms; ${server(r, 'hub')}${bareDetail}`,
    }),
  ];
}

function delivery(r: FanoutResult): string {
  const achieved = Math.round(r.emitted / r.duration);
  return (
    `${r.emitted} events emitted (${achieved}/s of the ${r.rate}/s asked), ` +
    `${r.delivered} of ${r.expected} deliveries received by 10 s after the last emit`
  );
}

/** The server's own part (from the hub, or the bare broadcaster, taking the event) and both sides' CPU. */
function server(r: FanoutResult, from: 'hub' | 'emit'): string {
  return (
    `server: ${from} to last client p50/p99 ${r.server_offer_p50_ms.toFixed(1)}/${r.server_offer_p99_ms.toFixed(1)} ms, ` +
    `${r.events_per_flush.toFixed(1)} events per write; CPU in cores: server ${r.server_cpu} ` +
    `(${r.server_cpu_us_per_event ?? '–'} µs per event), clients and emitter ${r.client_cpu}`
  );
}
