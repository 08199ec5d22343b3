import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatNumber } from '../format.ts';
import { alignSeries, type NamedSeries } from './align-series.ts';

const COLOURS = ['#2f5bd3', '#d9480f', '#2b8a3e', '#862e9c', '#e67700', '#0b7285', '#c2255c'];

/**
 * A time-series chart (uPlot, canvas) that follows its container's width. The newest value of each series is
 * also written out as text, for screen readers and for a glance without hovering. The legend is the console's
 * own: one toggle button per series (aria-pressed), so series are shown and hidden by keyboard as by mouse;
 * uPlot's own legend (rows that only take clicks) is off.
 */
export function TimeChart({
  title,
  unit,
  series,
  range,
}: {
  title: string;
  unit: string;
  series: NamedSeries[];
  /** The time window asked for, in Unix seconds; the x axis spans it even when samples cover less. */
  range: [number, number];
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const span = useRef(range);
  span.current = range;
  const names = series.map((s) => s.name).join('|');
  const data = alignSeries(series);
  const [hidden, setHidden] = useState<ReadonlySet<string>>(new Set());
  const hiddenNow = useRef(hidden);
  hiddenNow.current = hidden;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 180,
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.label ?? s.name,
          show: !hiddenNow.current.has(s.name),
          stroke: COLOURS[i % COLOURS.length] ?? '#2f5bd3',
          width: 1.5,
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v === null ? '—' : `${formatNumber(v, 2)} ${unit}`),
        })),
      ],
      axes: [{}, { size: 56, values: (_u, vals) => vals.map((v) => formatNumber(v, 1)) }],
      scales: {
        x: {
          time: true,
          range: (_u, min, max) =>
            Number.isFinite(span.current[0]) && Number.isFinite(span.current[1]) ? span.current : [min, max],
        },
        y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] },
      },
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
    };
    const u = new uPlot(opts, data, el);
    plot.current = u;
    const observer = new ResizeObserver(() =>
      u.setSize({ width: Math.max(200, el.clientWidth), height: 180 }),
    );
    observer.observe(el);
    return () => {
      observer.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [names, unit]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  const toggle = (name: string, index: number) => {
    const next = new Set(hidden);
    const show = next.has(name);
    if (show) next.delete(name);
    else next.add(name);
    setHidden(next);
    plot.current?.setSeries(index + 1, { show });
  };

  const latest = series.map((s) => {
    const last = [...s.points].reverse().find((p) => p.value !== null);
    return `${s.label ?? s.name}: ${last ? `${formatNumber(last.value, 2)} ${unit}` : 'no data'}`;
  });
  return (
    <figure class="chart">
      <figcaption>
        {title} <span class="muted">({unit})</span>
      </figcaption>
      <div ref={box} class="chart-canvas" aria-hidden="true" />
      {series.length > 1 ? (
        <fieldset class="chart-legend">
          <legend class="sr-only">{`${title}: series shown`}</legend>
          {series.map((s, i) => (
            <button
              key={s.name}
              type="button"
              class="legend-toggle"
              aria-pressed={!hidden.has(s.name)}
              onClick={() => toggle(s.name, i)}
            >
              <span
                class="legend-swatch"
                aria-hidden="true"
                style={{ background: COLOURS[i % COLOURS.length] ?? '#2f5bd3' }}
              />
              {s.label ?? s.name}
            </button>
          ))}
        </fieldset>
      ) : null}
      <p class="sr-only">Latest values. {latest.join('; ')}</p>
      {data[0].length === 0 ? <p class="muted">No samples in this time range yet.</p> : null}
    </figure>
  );
}
