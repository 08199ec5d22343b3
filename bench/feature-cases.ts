/**
 * The `features` group of `npm run bench` (issue 25): what an Idempotency-Key, a traceparent, a validated
 * catalogue type and a rotated secret's second signature cost the emit and delivery rates, each variant
 * against the plain one of the same run and the same platform process, in alternating rounds
 * (bench/feature-cost.ts). The target is the issue's: no more than 5 % off the plain rate. The verdict is taken
 * on the server's CPU time per operation, the work the feature adds; the wall-clock rate is in the note.
 */
import { runToEnd } from './json-child.js';
import { type ResultRow, row } from './result-row.js';

interface Round {
  rate: number;
  cpu_us: number | null;
  non2xx?: number;
  errors?: number;
  delivered?: number;
  expected?: number;
}

export interface Variant {
  name: string;
  label: string;
  /** Emits answered in the warm-up (to divide a CPU profile of the run by). */
  warm_up_ok?: number;
  rounds: Round[];
}

export interface FeatureResult {
  settings: {
    rounds: number;
    round_seconds: number;
    connections: number;
    delivery_events: number;
    subscriptions: number;
  };
  load_average: { before: number[]; after: number[] };
  seconds: number;
  /** Each block's variants, its plain reference first. */
  emit_blocks: Variant[][];
  delivery: Variant[];
}

export const BOUND = 0.95;

const median = (list: number[]): number => {
  const sorted = [...list].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const percent = (ratio: number) => `${Math.round(ratio * 100)} %`;
const range = (list: number[]) => {
  const finite = list.filter(Number.isFinite);
  return finite.length === 0 ? '–' : `${percent(Math.min(...finite))}–${percent(Math.max(...finite))}`;
};
const cpus = (v: Variant) => v.rounds.map((r) => r.cpu_us).filter((c): c is number => c !== null);

/** The rows of one side (emits or deliveries): the reference's, then each variant's against it. */
function sideRows(
  side: 'emit' | 'delivery',
  variants: Variant[],
  settings: FeatureResult['settings'],
): ResultRow[] {
  const [plain, ...others] = variants;
  if (!plain) return [];
  const unit = side === 'emit' ? 'events/s' : 'deliveries/s';
  const op = side === 'emit' ? 'emit' : 'delivery';
  const plainRate = median(plain.rounds.map((r) => r.rate));
  const plainCpu = median(cpus(plain));
  const how =
    side === 'emit'
      ? `${plain.rounds.length} rounds of ${settings.round_seconds} s, ${settings.connections} connections`
      : `${plain.rounds.length} rounds of ${settings.delivery_events} events × ${settings.subscriptions} subscriptions, ` +
        'rate and CPU over the backlog left when the emits were answered';
  const problems = (v: Variant) => {
    const refused = v.rounds.reduce((n, r) => n + (r.non2xx ?? 0) + (r.errors ?? 0), 0);
    const missing = v.rounds.reduce((n, r) => n + Math.max(0, (r.expected ?? 0) - (r.delivered ?? 0)), 0);
    return (
      (refused > 0 ? `; ${refused} answers not 2xx or failed` : '') +
      (missing > 0 ? `; ${missing} deliveries not made in time` : '')
    );
  };
  const rows: ResultRow[] = [
    row({
      id: `features.${side}_${plain.name}`,
      figure: `${plain.label} (reference)`,
      value: plainRate,
      unit,
      baseline: null,
      target: null,
      note:
        `server CPU ${Math.round(plainCpu)} µs per ${op} (medians of ${how}; rounds ` +
        `${Math.round(Math.min(...plain.rounds.map((r) => r.rate)))}–${Math.round(Math.max(...plain.rounds.map((r) => r.rate)))}/s)` +
        (side === 'emit'
          ? '; it includes what cannot be switched off: a trace id drawn per emit, the catalogue lookup of its type'
          : '; every delivery carries the traceparent, always on') +
        problems(plain),
    }),
  ];
  for (const v of others) {
    const rate = median(v.rounds.map((r) => r.rate));
    const cpu = median(cpus(v));
    const rateRatio = rate / plainRate;
    // Operations per server CPU-second against the plain one's: the rate a CPU-bound server would keep.
    const cpuRatio = plainCpu / cpu;
    const n = Math.min(v.rounds.length, plain.rounds.length);
    const pairedRate = Array.from({ length: n }, (_, i) => v.rounds[i]!.rate / plain.rounds[i]!.rate);
    const pairedCpu = Array.from({ length: n }, (_, i) => {
      const a = plain.rounds[i]!.cpu_us;
      const b = v.rounds[i]!.cpu_us;
      return a !== null && b !== null ? a / b : Number.NaN;
    });
    const met = (ratio: number) => (ratio >= BOUND ? 'met' : 'not met');
    rows.push(
      row({
        id: `features.${side}_${v.name}`,
        figure: v.label,
        value: rate,
        unit,
        baseline: { label: `${plain.label.split(' (')[0]}, same rounds`, value: plainRate },
        target: '≥ 95 % of plain, judged on server CPU per op',
        check: () => cpuRatio >= BOUND,
        note:
          `verdict on CPU: ${Math.round(cpu)} µs per ${op} against ${Math.round(plainCpu)} µs plain ` +
          `(${cpu >= plainCpu ? '+' : '−'}${Math.abs(cpu - plainCpu).toFixed(0)} µs), so ${percent(cpuRatio)} of plain's ` +
          `${side === 'emit' ? 'emits' : 'deliveries'} per CPU-second (${met(cpuRatio)}); by the wall-clock rate ${percent(rateRatio)} (${met(rateRatio)}). ` +
          `CPU per ${op} is the verdict because it is the work the feature adds, while the rate also moves with the ` +
          `other sessions on this shared host; round by round against the plain round next to it: rate ${range(pairedRate)}, ` +
          `CPU ${range(pairedCpu)}` +
          problems(v),
      }),
    );
  }
  return rows;
}

export function featureRows(result: FeatureResult): ResultRow[] {
  return [
    ...result.emit_blocks.flatMap((block) => sideRows('emit', block, result.settings)),
    ...sideRows('delivery', result.delivery, result.settings),
  ];
}

export async function runFeatureCases(options: {
  rounds: number;
  roundSeconds: number;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  options.log(
    `  bench/feature-cost.ts: ${options.rounds} alternating rounds per variant, ${options.roundSeconds} s per emit round`,
  );
  const { code, lines } = await runToEnd('feature-cost.ts', [
    '--rounds',
    String(options.rounds),
    '--round-seconds',
    String(options.roundSeconds),
    '--json',
  ]);
  const line = lines.filter((l) => l.startsWith('{')).at(-1);
  if (code !== 0 || !line) throw new Error(`feature-cost.ts exited with ${code}`);
  return featureRows(JSON.parse(line) as FeatureResult);
}
