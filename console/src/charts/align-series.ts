import type uPlot from 'uplot';

export interface Point {
  timestamp: string;
  value: number | null;
}

export interface NamedSeries {
  name: string;
  /** What the legend says, in words; the name when absent. */
  label?: string;
  points: readonly Point[];
}

/**
 * uPlot wants one shared x axis: the union of every series' timestamps (Unix seconds, ascending), with null
 * where a series has no point at that time.
 */
export function alignSeries(series: readonly NamedSeries[]): uPlot.AlignedData {
  const xs = new Set<number>();
  const maps = series.map((s) => {
    const m = new Map<number, number | null>();
    for (const p of s.points) {
      const t = Date.parse(p.timestamp) / 1000;
      if (Number.isNaN(t)) continue;
      xs.add(t);
      m.set(t, typeof p.value === 'number' ? p.value : null);
    }
    return m;
  });
  const x = [...xs].sort((a, b) => a - b);
  return [x, ...maps.map((m) => x.map((t) => m.get(t) ?? null))] as uPlot.AlignedData;
}

/** The earliest timestamp (Unix seconds) of any series with a value, or undefined when none has one. */
export function firstSample(series: readonly NamedSeries[]): number | undefined {
  let first: number | undefined;
  for (const s of series) {
    for (const p of s.points) {
      const t = Date.parse(p.timestamp) / 1000;
      if (p.value !== null && !Number.isNaN(t) && (first === undefined || t < first)) first = t;
    }
  }
  return first;
}
