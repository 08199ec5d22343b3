import { useEffect, useState } from 'preact/hooks';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { SelectFilter, TextFilter } from '../../components/filter-controls.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';
import { EmitEventForm } from './emit-event-form.tsx';
import type { EventItem } from './event-types.ts';
import { LiveTail } from './live-tail.tsx';

/** The stored events; loaded again whenever `emitted` counts another event emitted from this page. */
function History({ emitted }: { emitted: number }) {
  const { filters, set, setPage, query } = useListQuery({ event_type: '', source: '', status: '' });
  const list = useApi<{ events: EventItem[]; pagination: Pagination }>('/events', {
    query: { ...query, per_page: 20, sort: 'timestamp', order: 'desc' },
  });
  useEffect(() => {
    if (emitted > 0) list.reload();
  }, [emitted]);
  return (
    <section aria-labelledby="history-title">
      <div class="section-header">
        <h2 id="history-title">Stored events</h2>
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <div class="filters">
        <TextFilter
          label="Type"
          value={filters.event_type}
          placeholder="user.*"
          onChange={set('event_type')}
        />
        <TextFilter label="Source" value={filters.source} onChange={set('source')} />
        <SelectFilter
          label="Status"
          value={filters.status}
          onChange={set('status')}
          options={['emitted', 'processing', 'processed', 'failed']}
        />
      </div>
      <ApiView state={list} what="Events" endpoint="GET /api/v1/events">
        {(d) => (
          <DataTable
            caption="Stored events"
            columns={['Time', 'Type', 'Source', 'Priority', 'Status', 'Subscribers']}
            rows={d.events}
            empty="No events match."
            pagination={d.pagination}
            onPage={setPage}
            row={(e) => (
              <tr key={e.event_id}>
                <td class="nowrap">{formatTime(e.timestamp)}</td>
                <td>
                  <Link to={`/events/${encodeURIComponent(e.event_id)}`}>{e.event_type}</Link>
                </td>
                <td>{e.source}</td>
                <td>{e.priority ?? '—'}</td>
                <td>
                  <Badge value={e.status} />
                </td>
                <td>{e.subscriber_count ?? '—'}</td>
              </tr>
            )}
          />
        )}
      </ApiView>
    </section>
  );
}

/** The live tail over the WebSocket, the emit form, and the stored events with filters. */
export function EventsPage() {
  const [emitted, setEmitted] = useState(0);
  return (
    <Page title="Events">
      <LiveTail />
      <details class="panel">
        <summary>Emit an event</summary>
        <RequiresOperation operation="POST /api/v1/events" what="Emitting events">
          <EmitEventForm onEmitted={() => setEmitted((n) => n + 1)} />
        </RequiresOperation>
      </details>
      <History emitted={emitted} />
    </Page>
  );
}
