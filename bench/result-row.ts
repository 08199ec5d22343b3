/** One figure of `npm run bench`: the platform's value next to its baseline from the same run. */
export interface ResultRow {
  /** Stable key for machine readers, e.g. `http.status`. */
  id: string;
  figure: string;
  /** null when the figure could not be measured in this run (`note` says why). */
  value: number | null;
  unit: string;
  baseline: { label: string; value: number } | null;
  /** value / baseline. */
  ratio: number | null;
  /** The target in words, e.g. `≥ 70 % of bare`. */
  target: string | null;
  /** Whether the target was met; null when there is no target or no figure. */
  met: boolean | null;
  note?: string;
}

export function row(
  fields: Omit<ResultRow, 'ratio' | 'met'> & { check?: (value: number, ratio: number | null) => boolean },
): ResultRow {
  const { check, ...rest } = fields;
  const ratio =
    rest.value !== null && rest.baseline && rest.baseline.value !== 0
      ? rest.value / rest.baseline.value
      : null;
  return { ...rest, ratio, met: check && rest.value !== null ? check(rest.value, ratio) : null };
}

/** A figure that this run could not take, with the reason. */
export function notMeasured(
  id: string,
  figure: string,
  unit: string,
  target: string | null,
  note: string,
): ResultRow {
  return { id, figure, value: null, unit, baseline: null, ratio: null, target, met: null, note };
}
