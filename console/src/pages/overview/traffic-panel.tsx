import { ApiView } from '../../components/api-view.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { formatNumber, formatRatio } from '../../format.ts';
import type { ApiState } from '../../hooks/use-api.ts';
import type { Summary } from './overview-types.ts';

/** Responses by class from `errors.by_status` (every status from 400 up, counted by the platform). */
export function splitErrors(byStatus: Record<string, number> = {}) {
  let client = 0;
  let server = 0;
  for (const [code, n] of Object.entries(byStatus)) {
    if (Number(code) >= 500) server += n;
    else client += n;
  }
  const top = Object.entries(byStatus)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([code, n]) => `${code} × ${formatNumber(n)}`);
  return { client, server, top };
}

/**
 * Requests since this instance started, with server errors (5xx: the platform's fault) apart from client
 * errors (4xx: refused requests, wrong credentials, missing resources), and the request rate now.
 */
export function TrafficPanel({ state, rate }: { state: ApiState<Summary>; rate: number | undefined }) {
  return (
    <section aria-labelledby="traffic-title">
      <h2 id="traffic-title">Requests</h2>
      <ApiView state={state} what="Metrics summary" endpoint="GET /api/v1/metrics/summary">
        {(d) => {
          const total = d.requests?.['total'] ?? 0;
          const { client, server, top } = splitErrors(d.errors?.by_status);
          const share = (n: number) => (total > 0 ? ` (${formatRatio(n / total)})` : '');
          return (
            <KeyValues
              items={[
                ['Request rate now', `${formatNumber(rate, 2)} per second`],
                ['Requests since start', formatNumber(total)],
                [
                  'Server errors (5xx)',
                  <span data-testid="server-errors">{`${formatNumber(server)}${share(server)}`}</span>,
                ],
                [
                  'Client errors (4xx)',
                  <span data-testid="client-errors">{`${formatNumber(client)}${share(client)}`}</span>,
                ],
                top.length > 0 && ['Most frequent error codes', top.join(', ')],
                [
                  'Response time p95 / p99',
                  `${formatNumber(d.requests?.['p95_response_time_ms'], 1)} / ${formatNumber(d.requests?.['p99_response_time_ms'], 1)} ms`,
                ],
              ]}
            />
          );
        }}
      </ApiView>
    </section>
  );
}
