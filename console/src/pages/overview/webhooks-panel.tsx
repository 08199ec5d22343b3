import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { Link } from '../../components/link.tsx';
import { formatNumber, formatRatio } from '../../format.ts';
import type { ApiState } from '../../hooks/use-api.ts';
import type { Subscription } from '../subscriptions/subscription-types.ts';
import { type EventsHealth, num } from './overview-types.ts';

const detail = (h: EventsHealth, check: string, key: string) =>
  num(h.checks.find((c) => c.name === check)?.details?.[key]);

/**
 * Webhook deliveries: the backlog waiting to go out, the attempts of the last hour that failed, and the
 * subscriptions whose deliveries are failing (status error, or a last error on record), each a link to its
 * deliveries.
 */
export function WebhooksPanel({
  health,
  subscriptions,
}: {
  health: ApiState<EventsHealth>;
  subscriptions: ApiState<{ subscriptions: Subscription[] }>;
}) {
  const failing = (subscriptions.data?.subscriptions ?? []).filter(
    (s) => s.status === 'error' || (s.last_error ?? null) !== null,
  );
  return (
    <section aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Webhook deliveries</h2>
      <ApiView state={health} what="Event system health" endpoint="GET /api/v1/events/health">
        {(h) => (
          <KeyValues
            items={[
              ['Event system', <Badge value={h.status} />],
              [
                'Waiting to be delivered',
                <span data-testid="delivery-backlog">
                  {formatNumber(detail(h, 'outbox_backlog', 'pending_deliveries') ?? h.metrics['queue_size'])}
                </span>,
              ],
              ['Attempts in the last hour', formatNumber(detail(h, 'delivery_errors', 'attempts_last_hour'))],
              ['Failed attempts in the last hour', formatRatio(detail(h, 'delivery_errors', 'error_rate'))],
            ]}
          />
        )}
      </ApiView>
      {subscriptions.data ? (
        failing.length === 0 ? (
          <p class="muted">No subscription is failing.</p>
        ) : (
          <>
            <p>
              <strong data-testid="failing-subscriptions">{failing.length}</strong> of{' '}
              {subscriptions.data.subscriptions.length} subscriptions failing:
            </p>
            <ul class="problems" aria-label="Failing subscriptions">
              {failing.slice(0, 5).map((s) => (
                <li key={s.subscription_id}>
                  <Link to={`/subscriptions/${encodeURIComponent(s.subscription_id)}`}>{s.name}</Link>{' '}
                  <Badge value={s.status} /> {formatNumber(s.events_failed)} failed
                  <div class="small break">{s.last_error}</div>
                </li>
              ))}
            </ul>
            {failing.length > 5 ? <Link to="/subscriptions">All subscriptions</Link> : null}
          </>
        )
      ) : null}
    </section>
  );
}
