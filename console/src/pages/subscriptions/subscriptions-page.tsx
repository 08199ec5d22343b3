import { useState } from 'preact/hooks';
import { del, put } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { SelectFilter } from '../../components/filter-controls.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { formatNumber, formatRatio, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { CreateSubscriptionForm } from './create-subscription-form.tsx';
import type { Subscription } from './subscription-types.ts';

/** Webhook subscriptions: success rate and last delivery at a glance, pause / resume / delete, and create. */
export function SubscriptionsPage() {
  const [status, setStatus] = useState('');
  const list = useApi<{ subscriptions: Subscription[] }>('/events/subscriptions', {
    query: { status },
    refreshMs: REFRESH.lists,
  });
  const setEnabled = useAction(async (s: Subscription, enabled: boolean) => {
    await put(`/events/subscriptions/${encodeURIComponent(s.subscription_id)}`, { enabled });
    list.reload();
  });
  const remove = useAction(async (s: Subscription) => {
    await del(`/events/subscriptions/${encodeURIComponent(s.subscription_id)}`);
    list.reload();
  });
  return (
    <Page
      title="Subscriptions"
      actions={
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      }
    >
      <div class="filters">
        <SelectFilter
          label="Status"
          value={status}
          onChange={setStatus}
          options={['active', 'paused', 'error']}
        />
      </div>
      <ErrorNotice error={setEnabled.error ?? remove.error} />
      <ApiView state={list} what="Subscriptions" endpoint="GET /api/v1/events/subscriptions">
        {(d) => (
          <DataTable
            caption="Webhook subscriptions"
            columns={[
              'Name',
              'Patterns',
              'Target',
              'Status',
              'Delivered',
              'Success',
              'Last delivery',
              ACTIONS,
            ]}
            rows={d.subscriptions}
            empty="No subscriptions."
            row={(s) => (
              <tr key={s.subscription_id} data-subscription={s.subscription_id}>
                <td>
                  <Link to={`/subscriptions/${encodeURIComponent(s.subscription_id)}`}>{s.name}</Link>
                </td>
                <td>
                  <code>{s.event_patterns.join(', ')}</code>
                </td>
                <td class="small break">{s.webhook_url ?? s.delivery_method}</td>
                <td>
                  <Badge value={s.status} />
                </td>
                <td data-testid="events-delivered">{formatNumber(s.events_delivered)}</td>
                <td data-testid="success-rate">{formatRatio(s.success_rate)}</td>
                <td class="nowrap">{formatTime(s.last_delivery)}</td>
                <td class="nowrap">
                  {s.status === 'paused' || s.status === 'error' ? (
                    <button type="button" onClick={() => void setEnabled.run(s, true)}>
                      Resume
                    </button>
                  ) : (
                    <button type="button" onClick={() => void setEnabled.run(s, false)}>
                      Pause
                    </button>
                  )}{' '}
                  <ConfirmButton
                    label="Delete"
                    title={`Delete the subscription “${s.name}”?`}
                    confirmLabel="Delete"
                    danger
                    onConfirm={() => void remove.run(s)}
                  >
                    <p>Pending deliveries to it are dropped.</p>
                  </ConfirmButton>
                </td>
              </tr>
            )}
          />
        )}
      </ApiView>
      <details class="panel">
        <summary>Create a webhook subscription</summary>
        <RequiresOperation operation="POST /api/v1/events/subscriptions" what="Creating subscriptions">
          <CreateSubscriptionForm onCreated={list.reload} />
        </RequiresOperation>
      </details>
    </Page>
  );
}
