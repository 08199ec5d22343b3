/**
 * The delivery latency figures of `npm run bench`, taken by bench/delivery-latency.ts (issue 26): emit → webhook
 * receipt at 200/s and 1,000/s to one subscription and 1,000/s over ten, and emit → stream receipt for 100
 * WebSocket + 100 SSE clients at 1,000/s, each next to its bare baseline from the same run.
 */
import { runToEnd } from './json-child.js';
import { type ResultRow, row } from './result-row.js';

interface Latency {
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
}

interface LatencyResult {
  webhooks: {
    case: string;
    side: 'platform' | 'bare';
    received: number;
    expected: number;
    latency: Latency;
    cpu_ms_per_event: number;
    stall_ms: number;
  }[];
  streams: {
    side: 'platform' | 'bare';
    clients: string;
    delivered: number;
    expected: number;
    latency: Latency | null;
  }[];
}

// The targets, by case and percentile.
const TARGETS: Record<string, Partial<Record<keyof Latency, number>>> = {
  '200/s, 1 subscription': { p99_ms: 25 },
  '1000/s, 1 subscription': { p95_ms: 50, p99_ms: 100 },
  streams: { p99_ms: 25 },
};

export async function runLatencyCases(options: {
  duration: number;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  options.log(`  bench/delivery-latency.ts: ${options.duration} s per case, platform then bare`);
  const { code, lines } = await runToEnd('delivery-latency.ts', [
    '--duration',
    String(options.duration),
    '--json',
  ]);
  const line = lines.filter((l) => l.startsWith('{')).at(-1);
  if (code !== 0 || !line) throw new Error(`delivery-latency.ts exited with ${code}`);
  const result = JSON.parse(line) as LatencyResult;
  const rows: ResultRow[] = [];
  const figures = (
    idBase: string,
    figure: string,
    targets: Partial<Record<keyof Latency, number>>,
    platform: Latency | null,
    bare: Latency | null,
    note: string,
  ) => {
    for (const p of ['p50_ms', 'p95_ms', 'p99_ms', 'max_ms'] as const) {
      const target = targets[p];
      rows.push(
        row({
          id: `${idBase}.${p.replace('_ms', '')}`,
          figure: `${figure} ${p.replace('_ms', '')}`,
          value: platform?.[p] ?? null,
          unit: 'ms',
          baseline: bare ? { label: 'bare store-and-post', value: bare[p] } : null,
          target: target === undefined ? null : `≤ ${target} ms`,
          ...(target === undefined ? {} : { check: (value: number) => value <= target }),
          note,
        }),
      );
    }
  };
  for (const platform of result.webhooks.filter((r) => r.side === 'platform')) {
    const bare = result.webhooks.find((r) => r.side === 'bare' && r.case === platform.case);
    const id = `latency.webhook_${platform.case.replace(/[^0-9a-z]+/gi, '_').replace(/_$/, '')}`;
    figures(
      id,
      `webhook emit→receipt, ${platform.case}`,
      TARGETS[platform.case] ?? {},
      platform.latency,
      bare?.latency ?? null,
      `${platform.received}/${platform.expected} received; server CPU ${platform.cpu_ms_per_event} ms/event ` +
        `(bare ${bare?.cpu_ms_per_event ?? '–'}); health stall ${platform.stall_ms} ms (bare ${bare?.stall_ms ?? '–'})`,
    );
  }
  const platform = result.streams.find((r) => r.side === 'platform');
  const bare = result.streams.find((r) => r.side === 'bare');
  if (platform) {
    figures(
      'latency.streams',
      `stream emit→receipt, ${platform.clients} at 1000/s`,
      TARGETS['streams']!,
      platform.latency,
      bare?.latency ?? null,
      `${platform.delivered}/${platform.expected} frames received (bare ${bare?.delivered ?? '–'}/${bare?.expected ?? '–'}); baseline: the bare broadcaster`,
    );
  }
  return rows;
}
