import { ApiView } from '../../components/api-view.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { TextFilter } from '../../components/filter-controls.tsx';
import { ObjectFields } from '../../components/object-fields.tsx';
import { Page } from '../../components/page.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';

interface AuditEntry {
  id: string;
  timestamp: string;
  admin_user: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  details?: unknown;
  ip_address?: string;
  user_agent?: string;
}

/** Who changed what: GET /api/v1/admin/audit-log, filtered by action (`user.*` for a prefix), admin and resource type. */
export function AuditPage() {
  const { filters, set, setPage, query } = useListQuery({ action: '', admin_user: '', resource_type: '' });
  const list = useApi<{ audit_entries: AuditEntry[]; pagination?: Pagination }>('/admin/audit-log', {
    query: { ...query, per_page: 50 },
  });
  return (
    <Page
      title="Audit log"
      actions={
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      }
    >
      <div class="filters">
        <TextFilter label="Action" value={filters.action} placeholder="user.*" onChange={set('action')} />
        <TextFilter
          label="Admin"
          value={filters.admin_user}
          placeholder="admin"
          onChange={set('admin_user')}
        />
        <TextFilter
          label="Resource type"
          value={filters.resource_type}
          placeholder="user"
          onChange={set('resource_type')}
        />
      </div>
      <ApiView state={list} what="Audit log" endpoint="GET /api/v1/admin/audit-log">
        {(d) => (
          <DataTable
            caption="Audit log"
            columns={['Time', 'Admin', 'Action', 'Resource', 'From', 'Details']}
            rows={d.audit_entries}
            empty="No entries."
            pagination={d.pagination}
            onPage={setPage}
            row={(e) => (
              <tr key={e.id}>
                <td class="nowrap">{formatTime(e.timestamp)}</td>
                <td>{e.admin_user}</td>
                <td>
                  <code>{e.action}</code>
                </td>
                <td class="small break">
                  {e.resource_type}
                  {e.resource_id ? `:${e.resource_id}` : ''}
                </td>
                <td class="small">{e.ip_address ?? '—'}</td>
                <td class="audit-details">
                  <ObjectFields
                    value={
                      e.details !== null && typeof e.details === 'object'
                        ? (e.details as Record<string, unknown>)
                        : { value: e.details }
                    }
                    empty="—"
                  />
                </td>
              </tr>
            )}
          />
        )}
      </ApiView>
    </Page>
  );
}
