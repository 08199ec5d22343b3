import { useState } from 'preact/hooks';
import { firstSample, type Point } from '../../charts/align-series.ts';
import { TimeChart } from '../../charts/time-chart.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { RangeSelect, rangeQuery } from '../../components/range-select.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { groupMetrics } from './metric-groups.ts';

const RANGES = [
  { label: 'Last 15 minutes', minutes: 15, resolution: '1m' },
  { label: 'Last hour', minutes: 60, resolution: '1m' },
  { label: 'Last 6 hours', minutes: 360, resolution: '5m' },
  { label: 'Last 24 hours', minutes: 1440, resolution: '15m' },
] as const;

interface MetricsData {
  time_range: { start: string; end: string };
  metrics: Record<string, Point[]>;
}

/** Live charts from GET /api/v1/metrics, reloaded every 30 s (one-minute buckets at the finest). */
export function MetricsPanel() {
  const [rangeIndex, setRangeIndex] = useState(1);
  const range = RANGES[rangeIndex] ?? RANGES[1];
  const state = useApi<MetricsData>('/metrics', {
    query: () => rangeQuery(range),
    refreshMs: REFRESH.charts,
  });
  return (
    <section aria-labelledby="metrics-title">
      <div class="section-header">
        <h2 id="metrics-title">Live metrics</h2>
        <RangeSelect
          ranges={RANGES}
          value={rangeIndex}
          onChange={(i) => {
            setRangeIndex(i);
            state.reload();
          }}
        />
      </div>
      <ApiView state={state} what="Metrics" endpoint="GET /api/v1/metrics">
        {(d) => {
          const groups = groupMetrics(d.metrics ?? {});
          const start = Date.parse(d.time_range.start) / 1000;
          // A young installation has samples for part of the range only: the charts start at its first one.
          const first = firstSample(groups.flatMap((g) => g.series));
          const from = first !== undefined && first > start ? first : start;
          const range: [number, number] = [from, Date.parse(d.time_range.end) / 1000];
          if (groups.length === 0) return <p class="muted">The platform reported no metric series.</p>;
          return (
            <>
              {from > start ? (
                <p class="muted" data-testid="samples-since">
                  Samples since {formatTime(new Date(from * 1000).toISOString())}, the first in this range:
                  the charts start there.
                </p>
              ) : null}
              <div class="chart-grid">
                {groups.map((g) => (
                  <TimeChart key={g.title} title={g.title} unit={g.unit} series={g.series} range={range} />
                ))}
              </div>
            </>
          );
        }}
      </ApiView>
    </section>
  );
}
