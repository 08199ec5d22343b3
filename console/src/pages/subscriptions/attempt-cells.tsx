import { formatNumber } from '../../format.ts';

/**
 * How an attempt went, as three table cells: the HTTP status answered, the time it took and its error (a dash
 * for what is unknown). A delivery's row shows its last attempt with them, each attempt's row its own.
 */
export function AttemptCells({
  responseStatus,
  latencyMs,
  error,
}: {
  responseStatus: number | null;
  latencyMs: number | null;
  error: string | null;
}) {
  return (
    <>
      <td class="nowrap">{responseStatus ? `HTTP ${responseStatus}` : '—'}</td>
      <td class="nowrap">{latencyMs === null ? '—' : `${formatNumber(latencyMs)} ms`}</td>
      <td class="small break">{error ?? '—'}</td>
    </>
  );
}
