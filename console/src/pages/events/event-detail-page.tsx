import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import type { EventItem } from './event-types.ts';

interface AuditTrail {
  audit_trail: { timestamp: string; action: string; actor?: string; details?: unknown }[];
}

/** One event: its data and metadata, per-subscriber delivery attempts, and (admins) its audit trail. */
export function EventDetailPage({ id }: { id: string }) {
  const path = `/events/${encodeURIComponent(id)}`;
  const state = useApi<{ event: EventItem }>(path, { refreshMs: REFRESH.lists });
  const audit = useApi<AuditTrail>(`${path}/audit`);
  return (
    <Page title="Event" actions={<Link to="/events">← Events</Link>}>
      <ApiView state={state} what="Event" endpoint="GET /api/v1/events/{id}">
        {({ event: e }) => (
          <>
            <dl class="kv wide">
              <div>
                <dt>Id</dt>
                <dd>
                  <code>{e.event_id}</code>
                </dd>
              </div>
              <div>
                <dt>Type</dt>
                <dd>{e.event_type}</dd>
              </div>
              <div>
                <dt>Source</dt>
                <dd>{e.source}</dd>
              </div>
              <div>
                <dt>Time</dt>
                <dd>{formatTime(e.timestamp)}</dd>
              </div>
              <div>
                <dt>Priority</dt>
                <dd>{e.priority ?? '—'}</dd>
              </div>
              <div>
                <dt>Status</dt>
                <dd>
                  <Badge value={e.status} />
                </dd>
              </div>
              <div>
                <dt>Subscribers</dt>
                <dd>{formatNumber(e.subscriber_count)}</dd>
              </div>
              {e.sequence !== undefined ? (
                <div>
                  <dt>Sequence</dt>
                  <dd>{e.sequence}</dd>
                </div>
              ) : null}
            </dl>
            <h2>Data</h2>
            <JsonView value={e.data ?? {}} label="Event data" />
            <h2>Metadata</h2>
            <JsonView value={e.metadata ?? {}} label="Event metadata" />
            <h2>Deliveries</h2>
            {e.delivery_info ? (
              <>
                <p>
                  {e.delivery_info.successful_deliveries} delivered, {e.delivery_info.failed_deliveries}{' '}
                  failed, of {e.delivery_info.total_subscribers} subscriber(s).
                </p>
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Subscriber</th>
                        <th scope="col">Status</th>
                        <th scope="col">Time</th>
                        <th scope="col">Duration</th>
                        <th scope="col">Detail</th>
                      </tr>
                    </thead>
                    <tbody>
                      {e.delivery_info.delivery_attempts.length === 0 ? (
                        <tr>
                          <td colSpan={5} class="muted">
                            No delivery attempts yet.
                          </td>
                        </tr>
                      ) : null}
                      {e.delivery_info.delivery_attempts.map((a, i) => (
                        <tr key={i}>
                          <td>
                            <code>{a.subscriber}</code>
                          </td>
                          <td>
                            <Badge value={a.status} />
                          </td>
                          <td class="nowrap">{formatTime(a.delivery_time)}</td>
                          <td>
                            {a.processing_time_ms === undefined
                              ? '—'
                              : `${formatNumber(a.processing_time_ms)} ms`}
                          </td>
                          <td class="small">
                            {a.response_status ? `HTTP ${a.response_status}` : ''} {a.error ?? ''}
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              </>
            ) : (
              <p class="muted">No delivery information.</p>
            )}
          </>
        )}
      </ApiView>
      <h2>Audit trail</h2>
      <ApiView state={audit} what="Audit trail" endpoint="GET /api/v1/events/{id}/audit">
        {(d) => (
          <ul class="log-lines">
            {d.audit_trail.map((a, i) => (
              <li key={i}>
                <span class="muted">{formatTime(a.timestamp)}</span> <strong>{a.action}</strong>{' '}
                {a.actor ? <span class="muted">by {a.actor}</span> : null}{' '}
                {a.details ? <code class="preview">{JSON.stringify(a.details)}</code> : null}
              </li>
            ))}
          </ul>
        )}
      </ApiView>
    </Page>
  );
}
