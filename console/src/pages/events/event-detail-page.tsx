import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { KeyValues } from '../../components/key-values.tsx';
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
            <KeyValues
              variant="kv wide"
              items={[
                ['Id', <code>{e.event_id}</code>],
                ['Type', e.event_type],
                ['Source', e.source],
                ['Time', formatTime(e.timestamp)],
                ['Priority', e.priority ?? '—'],
                ['Status', <Badge value={e.status} />],
                ['Subscribers', formatNumber(e.subscriber_count)],
                e.sequence !== undefined && ['Sequence', e.sequence],
              ]}
            />
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
                <DataTable
                  caption="Delivery attempts"
                  columns={['Subscriber', 'Status', 'Time', 'Duration', 'Detail']}
                  rows={e.delivery_info.delivery_attempts}
                  empty="No delivery attempts yet."
                  row={(a, i) => (
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
                  )}
                />
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
