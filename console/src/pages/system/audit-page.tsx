import { useState } from 'preact/hooks';
import { ApiView } from '../../components/api-view.tsx';
import { Page } from '../../components/page.tsx';
import { Pager, type Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useDebounced } from '../../hooks/use-debounced.ts';

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
  const [action, setAction] = useState('');
  const [resource, setResource] = useState('');
  const [admin, setAdmin] = useState('');
  const [page, setPage] = useState(1);
  const a = useDebounced(action.trim());
  const r = useDebounced(resource.trim());
  const u = useDebounced(admin.trim());
  const list = useApi<{ audit_entries: AuditEntry[]; pagination?: Pagination }>('/admin/audit-log', {
    query: { action: a, resource_type: r, admin_user: u, page, per_page: 50 },
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
        <label>
          Action{' '}
          <input
            value={action}
            placeholder="user.*"
            onInput={(e) => {
              setAction(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
        <label>
          Admin{' '}
          <input
            value={admin}
            placeholder="admin"
            onInput={(e) => {
              setAdmin(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
        <label>
          Resource type{' '}
          <input
            value={resource}
            placeholder="user"
            onInput={(e) => {
              setResource(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
      </div>
      <ApiView state={list} what="Audit log" endpoint="GET /api/v1/admin/audit-log">
        {(d) => (
          <>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Admin</th>
                    <th scope="col">Action</th>
                    <th scope="col">Resource</th>
                    <th scope="col">From</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {d.audit_entries.length === 0 ? (
                    <tr>
                      <td colSpan={6} class="muted">
                        No entries.
                      </td>
                    </tr>
                  ) : null}
                  {d.audit_entries.map((e) => (
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
                      <td>
                        <code class="preview">{e.details ? JSON.stringify(e.details) : ''}</code>
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
    </Page>
  );
}
