import { patch } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { SelectFilter } from '../../components/filter-controls.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';
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

const SHOW = [
  ['unresolved', 'unresolved'],
  ['open', 'open'],
  ['acknowledged', 'acknowledged'],
  ['resolved', 'resolved'],
  ['', 'all'],
] as const;

/**
 * Security alerts (unresolved first by default), with acknowledge and resolve. `onChanged` runs after either
 * (the page's figures count the open alerts).
 */
export function AlertsSection({ onChanged }: { onChanged?: () => void }) {
  const { filters, set, setPage, query } = useListQuery({ status: 'unresolved' });
  const list = useApi<{ alerts: Alert[]; pagination?: Pagination }>('/admin/security/alerts', {
    query: { ...query, per_page: 20 },
    refreshMs: REFRESH.slow,
  });
  const move = useAction(async (a: Alert, to: 'acknowledged' | 'resolved') => {
    await patch(`/admin/security/alerts/${encodeURIComponent(a.id)}`, { status: to });
    list.reload();
    onChanged?.();
  });
  return (
    <section aria-labelledby="alerts-title">
      <div class="section-header">
        <h2 id="alerts-title">Alerts</h2>
        <SelectFilter
          label="Show"
          value={filters.status}
          onChange={set('status')}
          options={SHOW}
          any={null}
        />
      </div>
      <ErrorNotice error={move.error} title="Could not update the alert" />
      <ApiView state={list} what="Alerts" endpoint="GET /api/v1/admin/security/alerts">
        {(d) => (
          <DataTable
            caption="Security alerts"
            columns={['Severity', 'Alert', 'Affected', 'Time', 'Status', ACTIONS]}
            rows={d.alerts}
            empty="No alerts."
            pagination={d.pagination}
            onPage={setPage}
            row={(a) => (
              <tr key={a.id}>
                <td>
                  <Badge value={a.severity} />
                </td>
                <td>
                  <strong>{a.title ?? a.message ?? a.type}</strong>
                  {a.occurrences && a.occurrences > 1 ? <span class="muted"> ×{a.occurrences}</span> : null}
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
                    <button type="button" disabled={move.busy} onClick={() => void move.run(a, 'resolved')}>
                      Resolve
                    </button>
                  ) : null}
                </td>
              </tr>
            )}
          />
        )}
      </ApiView>
    </section>
  );
}
