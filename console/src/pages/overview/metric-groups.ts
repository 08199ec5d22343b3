import type { NamedSeries, Point } from '../../charts/align-series.ts';

/** The unit a series' name implies (`response_time_ms` → ms), in words; the metrics API names series this way. */
export function unitOf(name: string): string {
  if (/_per_second$/.test(name)) return 'per second';
  if (/_per_minute$/.test(name)) return 'per minute';
  if (/_ms$|_ms_/.test(name)) return 'ms';
  if (/_mb$/.test(name)) return 'MB';
  if (/_percent$/.test(name)) return '%';
  if (/_bytes$/.test(name)) return 'bytes';
  if (/_count$/.test(name)) return 'responses per interval';
  if (/_rate$/.test(name)) return 'share of responses';
  return '';
}

/** What each series the platform samples is, in words (series it adds later show their name in words). */
const LABELS: Record<string, string> = {
  requests_per_second: 'Responses per second',
  request_count: 'All responses',
  client_error_count: 'Client errors (4xx)',
  server_error_count: 'Server errors (5xx)',
  error_rate: 'Errors (4xx and 5xx) among responses',
  response_time_ms: 'Mean',
  response_time_p50_ms: 'Median (p50)',
  response_time_p95_ms: '95th percentile (p95)',
  response_time_p99_ms: '99th percentile (p99)',
  memory_usage_mb: 'Resident memory',
  heap_used_mb: 'JavaScript heap in use',
  cpu_usage_percent: 'CPU time (100 % is one core)',
  events_per_second: 'Events processed per second',
};

export const labelOf = (name: string): string => LABELS[name] ?? name.replaceAll('_', ' ');

const GROUPS: { title: string; test: (name: string) => boolean }[] = [
  { title: 'Request rate', test: (n) => /request/.test(n) && /per_(second|minute)$/.test(n) },
  { title: 'Responses and errors per interval', test: (n) => /_count$/.test(n) },
  { title: 'Latency', test: (n) => /response_time|latency/.test(n) },
  { title: 'Memory', test: (n) => /memory|heap|rss/.test(n) },
  { title: 'Event rate', test: (n) => /^events?_/.test(n) },
  { title: 'CPU', test: (n) => /cpu/.test(n) },
];

/**
 * `error_count` counts every response from 400 up and `server_error_count` those from 500 up (both measured
 * per sampling interval); their difference is the client errors, so the chart shows 4xx and 5xx apart.
 */
function withClientErrors(metrics: Record<string, Point[]>): Record<string, Point[]> {
  const all = metrics['error_count'];
  const server = metrics['server_error_count'];
  if (!all || !server) return metrics;
  const serverAt = new Map(server.map((p) => [p.timestamp, p.value]));
  const { error_count: _dropped, ...rest } = metrics;
  return {
    ...rest,
    client_error_count: all.map((p) => {
      const s = serverAt.get(p.timestamp);
      return {
        timestamp: p.timestamp,
        value: p.value === null ? null : Math.max(0, p.value - (typeof s === 'number' ? s : 0)),
      };
    }),
  };
}

export interface ChartGroup {
  title: string;
  unit: string;
  series: NamedSeries[];
}

/**
 * Sorts the series the server reports into the console's charts: request rate, responses with client and
 * server errors apart, latency percentiles, memory, event rate, CPU, and one chart for each other series, so
 * nothing measured goes unshown. Every series carries its label in words.
 */
export function groupMetrics(raw: Record<string, Point[]>): ChartGroup[] {
  const metrics = withClientErrors(raw);
  const out: ChartGroup[] = [];
  const used = new Set<string>();
  const names = Object.keys(metrics).sort();
  const series = (n: string): NamedSeries => ({ name: n, label: labelOf(n), points: metrics[n] ?? [] });
  for (const g of GROUPS) {
    const picked = names.filter((n) => !used.has(n) && g.test(n)).map(series);
    if (picked.length === 0) continue;
    for (const s of picked) used.add(s.name);
    out.push({ title: g.title, unit: unitOf(picked[0]!.name), series: picked });
  }
  for (const n of names) {
    if (used.has(n)) continue;
    out.push({ title: labelOf(n), unit: unitOf(n), series: [series(n)] });
  }
  return out;
}
