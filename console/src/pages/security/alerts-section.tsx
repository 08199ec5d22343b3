import { useState } from 'preact/hooks';
import { patch } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Pager, type Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';

export interface Alert {
  id: string;
  severity: string;
  type: string;
  title?: string;
  message?: string;
  description?: string;
  timestamp: string;
  status: string;
  affected_resources?: string[];
  occurrences?: number;
}

/** Security alerts (unresolved first by default), with acknowledge and resolve. */
export function AlertsSection() {
  const [status, setStatus] = useState('unresolved');
  const [page, setPage] = useState(1);
  const list = useApi<{ alerts: Alert[]; pagination?: Pagination }>('/admin/security/alerts', {
    query: { status, page, per_page: 20 },
    refreshMs: REFRESH.slow,
  });
  const move = useAction(async (a: Alert, to: 'acknowledged' | 'resolved') => {
    await patch(`/admin/security/alerts/${encodeURIComponent(a.id)}`, { status: to });
    list.reload();
  });
  return (
    <section aria-labelledby="alerts-title">
      <div class="section-header">
        <h2 id="alerts-title">Alerts</h2>
        <label>
          Show{' '}
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.currentTarget.value);
              setPage(1);
            }}
          >
            <option value="unresolved">unresolved</option>
            <option value="open">open</option>
            <option value="acknowledged">acknowledged</option>
            <option value="resolved">resolved</option>
            <option value="">all</option>
          </select>
        </label>
      </div>
      <ErrorNotice error={move.error} title="Could not update the alert" />
      <ApiView state={list} what="Alerts" endpoint="GET /api/v1/admin/security/alerts">
        {(d) => (
          <>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Severity</th>
                    <th scope="col">Alert</th>
                    <th scope="col">Affected</th>
                    <th scope="col">Time</th>
                    <th scope="col">Status</th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.alerts.length === 0 ? (
                    <tr>
                      <td colSpan={6} class="muted">
                        No alerts.
                      </td>
                    </tr>
                  ) : null}
                  {d.alerts.map((a) => (
                    <tr key={a.id}>
                      <td>
                        <Badge value={a.severity} />
                      </td>
                      <td>
                        <strong>{a.title ?? a.message ?? a.type}</strong>
                        {a.occurrences && a.occurrences > 1 ? (
                          <span class="muted"> ×{a.occurrences}</span>
                        ) : null}
                        {a.description ? <div class="small">{a.description}</div> : null}
                      </td>
                      <td class="small break">{(a.affected_resources ?? []).join(', ')}</td>
                      <td class="nowrap">{formatTime(a.timestamp)}</td>
                      <td>
                        <Badge value={a.status} />
                      </td>
                      <td class="nowrap">
                        {a.status === 'open' ? (
                          <button
                            type="button"
                            disabled={move.busy}
                            onClick={() => void move.run(a, 'acknowledged')}
                          >
                            Acknowledge
                          </button>
                        ) : null}{' '}
                        {a.status !== 'resolved' ? (
                          <button
                            type="button"
                            disabled={move.busy}
                            onClick={() => void move.run(a, 'resolved')}
                          >
                            Resolve
                          </button>
                        ) : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {d.pagination ? <Pager pagination={d.pagination} onPage={setPage} /> : null}
          </>
        )}
      </ApiView>
    </section>
  );
}
