/** A time range a chart can show: its label, its length and the resolution the route is asked for. */
export interface TimeRange {
  label: string;
  minutes: number;
  resolution: string;
}

/** The query of a chart route over `range`, ending now. */
export function rangeQuery(range: TimeRange): Record<string, string> {
  return {
    start_time: new Date(Date.now() - range.minutes * 60_000).toISOString(),
    end_time: new Date().toISOString(),
    resolution: range.resolution,
  };
}

/** The "Range" choice of a chart section's header. */
export function RangeSelect({
  ranges,
  value,
  onChange,
}: {
  ranges: readonly TimeRange[];
  value: number;
  onChange: (index: number) => void;
}) {
  return (
    <label class="inline">
      Range{' '}
      <select value={value} onChange={(e) => onChange(Number(e.currentTarget.value))}>
        {ranges.map((r, i) => (
          <option key={r.label} value={i}>
            {r.label}
          </option>
        ))}
      </select>
    </label>
  );
}
