import { useState } from 'preact/hooks';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { Link } from '../../components/link.tsx';
import { ObjectFields } from '../../components/object-fields.tsx';
import { Page } from '../../components/page.tsx';
import { formatNumber, formatRatio, formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { DeliveryChart } from './delivery-chart.tsx';
import { EditSubscriptionForm } from './edit-subscription-form.tsx';
import { RecoverForm } from './recover-form.tsx';
import { SubscriptionDeliveries } from './subscription-deliveries.tsx';
import type { Subscription } from './subscription-types.ts';

/**
 * One subscription: its settings and counters, the form that changes them, its delivered and failed attempts
 * over time, its deliveries (Resend on a failed one; every attempt of each), and the recovery of every
 * delivery that failed since a time.
 */
export function SubscriptionDetailPage({ id }: { id: string }) {
  const path = `/events/subscriptions/${encodeURIComponent(id)}`;
  const state = useApi<{ subscription: Subscription }>(path, { refreshMs: REFRESH.lists });
  const [round, setRound] = useState(0);
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
            <ObjectFields value={s.webhook_config} empty="Not a webhook subscription." />
          </>
        )}
      </ApiView>
      {/* Only once the subscription loaded: for someone else's or a deleted one, its 404 already says so. */}
      {state.data ? (
        <>
          {state.data.subscription.webhook_config ? (
            <EditSubscriptionForm subscription={state.data.subscription} onSaved={state.reload} />
          ) : null}
          <DeliveryChart id={id} />
          <SubscriptionDeliveries key={round} id={id} />
          <RecoverForm id={id} onFinished={() => setRound((r) => r + 1)} />
        </>
      ) : null}
    </Page>
  );
}
