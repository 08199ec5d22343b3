import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { AttemptCells } from './attempt-cells.tsx';
import type { DeliveryAttempt, SubscriptionDelivery } from './subscription-types.ts';

/**
 * Every attempt of one delivery, oldest first (GET …/deliveries/{delivery_id}/attempts): its number, time,
 * outcome, answer, duration and error, and when the next one was due after a failed one.
 */
export function DeliveryAttempts({ base, delivery }: { base: string; delivery: SubscriptionDelivery }) {
  const state = useApi<{ attempts: DeliveryAttempt[] }>(
    `${base}/deliveries/${encodeURIComponent(delivery.delivery_id)}/attempts`,
    { refreshMs: REFRESH.lists },
  );
  return (
    <ApiView
      state={state}
      what="Attempts"
      endpoint="GET /api/v1/events/subscriptions/{id}/deliveries/{delivery_id}/attempts"
    >
      {(d) => (
        <DataTable
          caption={`Attempts of ${delivery.event_type} (${delivery.delivery_id})`}
          columns={['Attempt', 'Time', 'Outcome', 'Response', 'Duration', 'Error']}
          rows={d.attempts}
          empty="No attempts yet."
          row={(a) => (
            <tr key={a.attempt} data-attempt={a.attempt}>
              <td>{a.attempt}</td>
              <td class="nowrap">{formatTime(a.attempted_at)}</td>
              <td>
                <Badge value={a.status} />
                {a.next_attempt_at ? (
                  <div class="muted small">retry due {formatTime(a.next_attempt_at)}</div>
                ) : null}
              </td>
              <AttemptCells responseStatus={a.response_status} latencyMs={a.latency_ms} error={a.error} />
            </tr>
          )}
        />
      )}
    </ApiView>
  );
}
