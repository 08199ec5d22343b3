import { useState } from 'preact/hooks';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { Pager, type Pagination } from '../../components/pager.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { SortHeader } from '../../components/sort-header.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useDebounced } from '../../hooks/use-debounced.ts';
import { CreateUserForm } from './create-user-form.tsx';
import { ROLES, type UserItem } from './user-types.ts';

/** GET /api/v1/admin/users with search, filters, sorting and pages; and the create form. */
export function UsersPage() {
  const [search, setSearch] = useState('');
  const [role, setRole] = useState('');
  const [status, setStatus] = useState('');
  const [sort, setSort] = useState('created_at');
  const [order, setOrder] = useState<'asc' | 'desc'>('desc');
  const [page, setPage] = useState(1);
  const [created, setCreated] = useState<string | null>(null);
  const q = useDebounced(search.trim());
  const list = useApi<{ users: UserItem[]; pagination: Pagination }>('/admin/users', {
    query: { page, per_page: 20, search: q, role, status, sort, order },
  });
  const onSort = (field: string, o: 'asc' | 'desc') => {
    setSort(field);
    setOrder(o);
    setPage(1);
  };
  return (
    <Page title="Users" actions={<Link to="/account">Your API keys and sessions</Link>}>
      <div class="filters">
        <label>
          Search{' '}
          <input
            type="search"
            value={search}
            placeholder="Name, e-mail, username"
            onInput={(e) => {
              setSearch(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
        <label>
          Role{' '}
          <select
            value={role}
            onChange={(e) => {
              setRole(e.currentTarget.value);
              setPage(1);
            }}
          >
            <option value="">Any</option>
            {ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
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
            <option>active</option>
            <option>inactive</option>
            <option>suspended</option>
          </select>
        </label>
      </div>
      <ApiView state={list} what="Users" endpoint="GET /api/v1/admin/users">
        {(d) => (
          <>
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Users</caption>
                <thead>
                  <tr>
                    <SortHeader label="Username" field="username" sort={sort} order={order} onSort={onSort} />
                    <SortHeader label="E-mail" field="email" sort={sort} order={order} onSort={onSort} />
                    <th scope="col">Roles</th>
                    <th scope="col">Status</th>
                    <SortHeader
                      label="Created"
                      field="created_at"
                      sort={sort}
                      order={order}
                      onSort={onSort}
                    />
                    <SortHeader
                      label="Last login"
                      field="last_login"
                      sort={sort}
                      order={order}
                      onSort={onSort}
                    />
                  </tr>
                </thead>
                <tbody>
                  {d.users.length === 0 ? (
                    <tr>
                      <td colSpan={6} class="muted">
                        No users match.
                      </td>
                    </tr>
                  ) : null}
                  {d.users.map((u) => (
                    <tr key={u.id}>
                      <td>
                        <Link to={`/users/${encodeURIComponent(u.id)}`}>{u.username}</Link>
                        {u.full_name ? <div class="muted small">{u.full_name}</div> : null}
                      </td>
                      <td>{u.email}</td>
                      <td>{u.roles.join(', ')}</td>
                      <td>
                        <Badge value={u.status} />
                      </td>
                      <td>{formatTime(u.created_at)}</td>
                      <td>{formatTime(u.last_login)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pagination={d.pagination} onPage={setPage} />
          </>
        )}
      </ApiView>
      <details class="panel">
        <summary>Create user</summary>
        {created ? (
          <p class="notice notice-good" role="status">
            User <strong>{created}</strong> created.
          </p>
        ) : null}
        <RequiresOperation operation="POST /api/v1/admin/users" what="Creating users">
          <CreateUserForm
            onCreated={(_id, username) => {
              setCreated(username);
              list.reload();
            }}
          />
        </RequiresOperation>
      </details>
    </Page>
  );
}
