import { useState } from 'preact/hooks';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { Pager, type Pagination } from '../../components/pager.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useDebounced } from '../../hooks/use-debounced.ts';
import { EmitEventForm } from './emit-event-form.tsx';
import type { EventItem } from './event-types.ts';
import { LiveTail } from './live-tail.tsx';

function History() {
  const [type, setType] = useState('');
  const [source, setSource] = useState('');
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const t = useDebounced(type.trim());
  const s = useDebounced(source.trim());
  const list = useApi<{ events: EventItem[]; pagination: Pagination }>('/events', {
    query: { event_type: t, source: s, status, page, per_page: 20, sort: 'timestamp', order: 'desc' },
  });
  return (
    <section aria-labelledby="history-title">
      <div class="section-header">
        <h2 id="history-title">Stored events</h2>
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <div class="filters">
        <label>
          Type{' '}
          <input
            value={type}
            placeholder="user.*"
            onInput={(e) => {
              setType(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
        <label>
          Source{' '}
          <input
            value={source}
            onInput={(e) => {
              setSource(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
        <label>
          Status{' '}
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.currentTarget.value);
              setPage(1);
            }}
          >
            <option value="">Any</option>
            <option>emitted</option>
            <option>processing</option>
            <option>processed</option>
            <option>failed</option>
          </select>
        </label>
      </div>
      <ApiView state={list} what="Events" endpoint="GET /api/v1/events">
        {(d) => (
          <>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Type</th>
                    <th scope="col">Source</th>
                    <th scope="col">Priority</th>
                    <th scope="col">Status</th>
                    <th scope="col">Subscribers</th>
                  </tr>
                </thead>
                <tbody>
                  {d.events.length === 0 ? (
                    <tr>
                      <td colSpan={6} class="muted">
                        No events match.
                      </td>
                    </tr>
                  ) : null}
                  {d.events.map((e) => (
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
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pagination={d.pagination} onPage={setPage} />
          </>
        )}
      </ApiView>
    </section>
  );
}

/** The live tail over the WebSocket, the emit form, and the stored events with filters. */
export function EventsPage() {
  return (
    <Page title="Events">
      <LiveTail />
      <details class="panel">
        <summary>Emit an event</summary>
        <RequiresOperation operation="POST /api/v1/events" what="Emitting events">
          <EmitEventForm />
        </RequiresOperation>
      </details>
      <History />
    </Page>
  );
}
