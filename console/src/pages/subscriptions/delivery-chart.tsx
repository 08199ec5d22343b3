import { useState } from 'preact/hooks';
import type { Point } from '../../charts/align-series.ts';
import { TimeChart } from '../../charts/time-chart.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { RangeSelect, rangeQuery } from '../../components/range-select.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';

const RANGES = [
  { label: 'Last hour', minutes: 60, resolution: '1m', width: 60_000 },
  { label: 'Last 24 hours', minutes: 1440, resolution: '15m', width: 900_000 },
  { label: 'Last 7 days', minutes: 10_080, resolution: '1h', width: 3_600_000 },
  { label: 'Last 30 days', minutes: 43_200, resolution: '1d', width: 86_400_000 },
] as const;

interface Timeline {
  time_range: { start: string; end: string };
  buckets: { timestamp: string; delivered: number; failed: number }[];
  totals: { delivered: number; failed: number };
}

/**
 * Every bucket from the first with attempts to the end of the range, zero where none were made (the route
 * leaves empty buckets out): a young subscription's chart starts at its first attempt, not days before it.
 */
function filled(
  t: Timeline,
  width: number,
): { delivered: Point[]; failed: Point[]; from: number | undefined } {
  const at = new Map(t.buckets.map((b) => [Date.parse(b.timestamp), b]));
  const first = t.buckets[0] ? Date.parse(t.buckets[0].timestamp) : undefined;
  const delivered: Point[] = [];
  const failed: Point[] = [];
  if (first === undefined) return { delivered, failed, from: undefined };
  const end = Date.parse(t.time_range.end);
  for (let x = first; x <= end; x += width) {
    const b = at.get(x);
    const timestamp = new Date(x).toISOString();
    delivered.push({ timestamp, value: b?.delivered ?? 0 });
    failed.push({ timestamp, value: b?.failed ?? 0 });
  }
  return { delivered, failed, from: first };
}

/** Delivered and failed attempts of one subscription over time (its delivery timeline). */
export function DeliveryChart({ id }: { id: string }) {
  const [rangeIndex, setRangeIndex] = useState(1);
  const range = RANGES[rangeIndex] ?? RANGES[1];
  const state = useApi<Timeline>(`/events/subscriptions/${encodeURIComponent(id)}/delivery-timeline`, {
    query: () => rangeQuery(range),
    refreshMs: REFRESH.charts,
  });
  return (
    <section aria-labelledby="delivery-chart-title">
      <div class="section-header">
        <h2 id="delivery-chart-title">Deliveries over time</h2>
        <RangeSelect
          ranges={RANGES}
          value={rangeIndex}
          onChange={(i) => {
            setRangeIndex(i);
            state.reload();
          }}
        />
      </div>
      <ApiView
        state={state}
        what="Delivery timeline"
        endpoint="GET /api/v1/events/subscriptions/{id}/delivery-timeline"
      >
        {(t) => {
          const f = filled(t, range.width);
          const end = Date.parse(t.time_range.end) / 1000;
          return (
            <>
              <KeyValues
                items={[
                  [
                    'Attempts delivered',
                    <span data-testid="attempts-delivered">{formatNumber(t.totals.delivered)}</span>,
                  ],
                  [
                    'Attempts failed',
                    <span data-testid="attempts-failed">{formatNumber(t.totals.failed)}</span>,
                  ],
                  f.from !== undefined && [
                    'First attempt in this range',
                    formatTime(new Date(f.from).toISOString()),
                  ],
                ]}
              />
              {f.from === undefined ? (
                <p class="muted">No delivery attempts in this range.</p>
              ) : (
                <TimeChart
                  title="Delivery attempts"
                  unit={`attempts per ${range.resolution === '1d' ? 'day' : range.resolution === '1h' ? 'hour' : range.resolution === '15m' ? '15 minutes' : 'minute'}`}
                  series={[
                    { name: 'delivered', label: 'Delivered (2xx answer)', points: f.delivered },
                    {
                      name: 'failed',
                      label: 'Failed (other answer, timeout or no connection)',
                      points: f.failed,
                    },
                  ]}
                  range={[f.from / 1000, end]}
                />
              )}
            </>
          );
        }}
      </ApiView>
    </section>
  );
}
