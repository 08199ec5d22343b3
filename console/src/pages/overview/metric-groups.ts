import type { NamedSeries } from '../../charts/align-series.ts';

/** The unit a series' name implies (`response_time_ms` → ms); the metrics API names series this way. */
export function unitOf(name: string): string {
  if (/_per_second$/.test(name)) return '/s';
  if (/_per_minute$/.test(name)) return '/min';
  if (/_ms$|_ms_/.test(name)) return 'ms';
  if (/_mb$/.test(name)) return 'MB';
  if (/_percent$/.test(name)) return '%';
  if (/_bytes$/.test(name)) return 'bytes';
  if (/_count$/.test(name)) return 'count';
  if (/_rate$/.test(name)) return 'ratio';
  return '';
}

const GROUPS: { title: string; test: (name: string) => boolean }[] = [
  { title: 'Request rate', test: (n) => /request/.test(n) && /per_(second|minute)$/.test(n) },
  { title: 'Latency', test: (n) => /response_time|latency/.test(n) },
  { title: 'Memory', test: (n) => /memory|heap|rss/.test(n) },
  { title: 'Event rate', test: (n) => /^events?_/.test(n) },
  { title: 'CPU', test: (n) => /cpu/.test(n) },
  { title: 'Requests and errors per interval', test: (n) => /_count$/.test(n) },
];

export interface ChartGroup {
  title: string;
  unit: string;
  series: NamedSeries[];
}

/**
 * Sorts the series the server reports into the console's charts: request rate, latency percentiles, memory,
 * event rate, CPU, counts, and one chart for each other series, so nothing measured goes unshown.
 */
export function groupMetrics(metrics: Record<string, NamedSeries['points']>): ChartGroup[] {
  const out: ChartGroup[] = [];
  const used = new Set<string>();
  const names = Object.keys(metrics).sort();
  for (const g of GROUPS) {
    const series = names
      .filter((n) => !used.has(n) && g.test(n))
      .map((n) => ({ name: n, points: metrics[n] ?? [] }));
    if (series.length === 0) continue;
    for (const s of series) used.add(s.name);
    out.push({ title: g.title, unit: unitOf(series[0]!.name), series });
  }
  for (const n of names) {
    if (used.has(n)) continue;
    out.push({
      title: n.replaceAll('_', ' '),
      unit: unitOf(n),
      series: [{ name: n, points: metrics[n] ?? [] }],
    });
  }
  return out;
}
