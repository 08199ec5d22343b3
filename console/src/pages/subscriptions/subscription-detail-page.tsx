import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { formatNumber, formatRatio, formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { SubscriptionDeliveries } from './subscription-deliveries.tsx';
import type { Subscription } from './subscription-types.ts';

/** One subscription: its settings and counters, and its deliveries. */
export function SubscriptionDetailPage({ id }: { id: string }) {
  const path = `/events/subscriptions/${encodeURIComponent(id)}`;
  const state = useApi<{ subscription: Subscription }>(path, { refreshMs: REFRESH.lists });
  return (
    <Page title="Subscription" actions={<Link to="/subscriptions">← Subscriptions</Link>}>
      <ApiView state={state} what="Subscription" endpoint="GET /api/v1/events/subscriptions/{id}">
        {({ subscription: s }) => (
          <>
            <h2>{s.name}</h2>
            <KeyValues
              variant="kv wide"
              items={[
                ['Status', <Badge value={s.status} />],
                ['Patterns', <code>{s.event_patterns.join(', ')}</code>],
                ['Target', <span class="break">{s.webhook_url ?? s.delivery_method}</span>],
                ['Delivered', formatNumber(s.events_delivered)],
                ['Failed', formatNumber(s.events_failed)],
                ['Success rate', formatRatio(s.success_rate)],
                ['Last delivery', formatTime(s.last_delivery)],
                ['Last error', s.last_error ?? '—'],
              ]}
            />
            <h3>Webhook settings</h3>
            <JsonView value={s.webhook_config} label="Webhook settings (secret masked)" />
          </>
        )}
      </ApiView>
      {/* Only once the subscription loaded: for someone else's or a deleted one, its 404 already says so. */}
      {state.data ? <SubscriptionDeliveries id={id} /> : null}
    </Page>
  );
}
