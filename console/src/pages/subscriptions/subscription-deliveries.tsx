import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { useOperation } from '../../api/operations.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { SelectFilter } from '../../components/filter-controls.tsx';
import { Link } from '../../components/link.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { AttemptCells } from './attempt-cells.tsx';
import { DeliveryAttempts } from './delivery-attempts.tsx';
import type { SubscriptionDelivery } from './subscription-types.ts';

const STATUSES = ['pending', 'delivering', 'delivered', 'failed', 'dropped'];
const COLUMNS = ['Event', 'Status', 'Attempts', 'Response', 'Duration', 'Error', 'Last attempt', ACTIONS];
const RESEND = 'POST /api/v1/events/subscriptions/{subscription_id}/deliveries/{delivery_id}/resend';

/**
 * A subscription's deliveries, newest first, each with its last attempt (answer, time taken, error) and, when
 * it failed, a Resend button: one request per page. "Show attempts" (a disclosure button: Enter or Space)
 * opens a row under the delivery with every one of its attempts, loaded when opened.
 */
export function SubscriptionDeliveries({ id }: { id: string }) {
  const { filters, set, setPage, query } = useListQuery({ status: '' });
  const base = `/events/subscriptions/${encodeURIComponent(id)}`;
  const list = useApi<{ deliveries: SubscriptionDelivery[]; pagination: Pagination }>(`${base}/deliveries`, {
    query: { ...query, per_page: 10 },
    refreshMs: REFRESH.lists,
  });
  const canResend = useOperation(RESEND);
  const [resent, setResent] = useState('');
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (deliveryId: string) =>
    setOpen((was) => {
      const now = new Set(was);
      if (!now.delete(deliveryId)) now.add(deliveryId);
      return now;
    });
  const resend = useAction(async (d: SubscriptionDelivery) => {
    setResent('');
    await post(`${base}/deliveries/${encodeURIComponent(d.delivery_id)}/resend`, {});
    setResent(`The delivery of ${d.event_type} is queued again.`);
    list.reload();
  });
  return (
    <section aria-labelledby="deliveries-title">
      <div class="section-header">
        <h2 id="deliveries-title">Deliveries</h2>
        <button type="button" onClick={list.reload} disabled={list.loading}>
          Refresh deliveries
        </button>
      </div>
      <div class="filters">
        <SelectFilter label="Status" value={filters.status} onChange={set('status')} options={STATUSES} />
      </div>
      <SuccessNotice>{resent}</SuccessNotice>
      <ErrorNotice error={resend.error} title="Could not resend" />
      <ApiView state={list} what="Deliveries" endpoint="GET /api/v1/events/subscriptions/{id}/deliveries">
        {(d) => (
          <DataTable
            caption="Deliveries"
            columns={COLUMNS}
            rows={d.deliveries}
            empty="No deliveries."
            pagination={d.pagination}
            onPage={setPage}
            row={(x) => {
              const shown = open.has(x.delivery_id);
              const panel = `attempts-${x.delivery_id}`;
              const verb = shown ? 'Hide' : 'Show';
              return (
                <Fragment key={x.delivery_id}>
                  <tr data-delivery={x.delivery_id}>
                    <td>
                      <Link to={`/events/${encodeURIComponent(x.event_id)}`}>{x.event_type}</Link>
                      {x.replay_id ? <div class="muted small">replay {x.replay_id}</div> : null}
                    </td>
                    <td>
                      <Badge value={x.status} />
                      {x.next_attempt_at ? (
                        <div class="muted small">next {formatTime(x.next_attempt_at)}</div>
                      ) : null}
                    </td>
                    <td class="nowrap">
                      {x.attempts}
                      {x.attempts > 0 ? (
                        <>
                          {' '}
                          <button
                            type="button"
                            aria-expanded={shown ? 'true' : 'false'}
                            aria-controls={shown ? panel : undefined}
                            aria-label={`${verb} attempts of ${x.event_type} (${x.delivery_id})`}
                            onClick={() => toggle(x.delivery_id)}
                          >
                            {verb} attempts
                          </button>
                        </>
                      ) : null}
                    </td>
                    <AttemptCells
                      responseStatus={x.response_status}
                      latencyMs={x.latency_ms}
                      error={x.last_error}
                    />
                    <td class="nowrap">{formatTime(x.last_attempt_at)}</td>
                    <td class="nowrap">
                      {x.status === 'failed' && canResend ? (
                        <button
                          type="button"
                          aria-label={`Resend ${x.event_type} (${x.delivery_id})`}
                          aria-disabled={resend.busy ? 'true' : undefined}
                          onClick={() => {
                            if (!resend.busy) void resend.run(x);
                          }}
                        >
                          Resend
                        </button>
                      ) : null}
                    </td>
                  </tr>
                  {shown ? (
                    <tr id={panel} data-attempts-of={x.delivery_id} class="attempts-row">
                      <td colSpan={COLUMNS.length}>
                        {/* A new count of attempts loads them again at once. */}
                        <DeliveryAttempts key={x.attempts} base={base} delivery={x} />
                      </td>
                    </tr>
                  ) : null}
                </Fragment>
              );
            }}
          />
        )}
      </ApiView>
    </section>
  );
}
