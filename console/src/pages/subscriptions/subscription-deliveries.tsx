import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { SelectFilter } from '../../components/filter-controls.tsx';
import { Link } from '../../components/link.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import type { SubscriptionDelivery } from './subscription-types.ts';

const STATUSES = ['pending', 'delivering', 'delivered', 'failed', 'dropped'];

/** A subscription's deliveries, newest first, with each one's last attempt: one request per page. */
export function SubscriptionDeliveries({ id }: { id: string }) {
  const { filters, set, setPage, query } = useListQuery({ status: '' });
  const list = useApi<{ deliveries: SubscriptionDelivery[]; pagination: Pagination }>(
    `/events/subscriptions/${encodeURIComponent(id)}/deliveries`,
    { query: { ...query, per_page: 10 }, refreshMs: REFRESH.lists },
  );
  return (
    <>
      <div class="section-header">
        <h2>Deliveries</h2>
        <button type="button" onClick={list.reload} disabled={list.loading}>
          Refresh deliveries
        </button>
      </div>
      <div class="filters">
        <SelectFilter label="Status" value={filters.status} onChange={set('status')} options={STATUSES} />
      </div>
      <ApiView state={list} what="Deliveries" endpoint="GET /api/v1/events/subscriptions/{id}/deliveries">
        {(d) => (
          <DataTable
            caption="Deliveries"
            columns={['Event', 'Status', 'Attempts', 'Response', 'Last attempt']}
            rows={d.deliveries}
            empty="No deliveries."
            pagination={d.pagination}
            onPage={setPage}
            row={(x) => (
              <tr key={x.delivery_id}>
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
                <td>{x.attempts}</td>
                <td class="small">
                  {x.response_status ? `HTTP ${x.response_status}` : ''}
                  {x.latency_ms === null ? '' : ` in ${formatNumber(x.latency_ms)} ms`} {x.last_error ?? ''}
                </td>
                <td class="nowrap">{formatTime(x.last_attempt_at)}</td>
              </tr>
            )}
          />
        )}
      </ApiView>
    </>
  );
}
