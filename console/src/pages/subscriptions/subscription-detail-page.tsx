import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { formatNumber, formatRatio, formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import type { Subscription } from './subscription-types.ts';

interface Delivery {
  id?: string;
  delivery_id?: string;
  event_id: string;
  event_type?: string;
  status: string;
  attempt?: number;
  attempts?: number;
  response_status?: number | null;
  error?: string | null;
  duration_ms?: number | null;
  processing_time_ms?: number | null;
  created_at?: string;
  delivered_at?: string | null;
  next_attempt_at?: string | null;
  delivery_time?: string | null;
}

/** One subscription: its settings and counters, and its recent deliveries. */
export function SubscriptionDetailPage({ id }: { id: string }) {
  const path = `/events/subscriptions/${encodeURIComponent(id)}`;
  const state = useApi<{ subscription: Subscription }>(path, { refreshMs: REFRESH.lists });
  const deliveries = useApi<{ deliveries: Delivery[] }>(`${path}/deliveries`, { refreshMs: REFRESH.lists });
  return (
    <Page title="Subscription" actions={<Link to="/subscriptions">← Subscriptions</Link>}>
      <ApiView state={state} what="Subscription" endpoint="GET /api/v1/events/subscriptions/{id}">
        {({ subscription: s }) => (
          <>
            <h2>{s.name}</h2>
            <dl class="kv wide">
              <div>
                <dt>Status</dt>
                <dd>
                  <Badge value={s.status} />
                </dd>
              </div>
              <div>
                <dt>Patterns</dt>
                <dd>
                  <code>{s.event_patterns.join(', ')}</code>
                </dd>
              </div>
              <div>
                <dt>Target</dt>
                <dd class="break">{s.webhook_url ?? s.delivery_method}</dd>
              </div>
              <div>
                <dt>Delivered</dt>
                <dd>{formatNumber(s.events_delivered)}</dd>
              </div>
              <div>
                <dt>Failed</dt>
                <dd>{formatNumber(s.events_failed)}</dd>
              </div>
              <div>
                <dt>Success rate</dt>
                <dd>{formatRatio(s.success_rate)}</dd>
              </div>
              <div>
                <dt>Last delivery</dt>
                <dd>{formatTime(s.last_delivery)}</dd>
              </div>
              <div>
                <dt>Last error</dt>
                <dd>{s.last_error ?? '—'}</dd>
              </div>
            </dl>
            <h3>Webhook settings</h3>
            <JsonView value={s.webhook_config} label="Webhook settings (secret masked)" />
          </>
        )}
      </ApiView>
      <h2>Deliveries</h2>
      <ApiView
        state={deliveries}
        what="Deliveries"
        endpoint="GET /api/v1/events/subscriptions/{id}/deliveries"
      >
        {(d) => (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Response</th>
                  <th scope="col">Time</th>
                </tr>
              </thead>
              <tbody>
                {d.deliveries.length === 0 ? (
                  <tr>
                    <td colSpan={5} class="muted">
                      No deliveries yet.
                    </td>
                  </tr>
                ) : null}
                {d.deliveries.map((x, i) => (
                  <tr key={x.delivery_id ?? x.id ?? i}>
                    <td>
                      <Link to={`/events/${encodeURIComponent(x.event_id)}`}>
                        {x.event_type ?? x.event_id}
                      </Link>
                    </td>
                    <td>
                      <Badge value={x.status} />
                    </td>
                    <td>{x.attempts ?? x.attempt ?? '—'}</td>
                    <td class="small">
                      {x.response_status ? `HTTP ${x.response_status}` : ''} {x.error ?? ''}
                    </td>
                    <td class="nowrap">{formatTime(x.delivered_at ?? x.delivery_time ?? x.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </ApiView>
    </Page>
  );
}
