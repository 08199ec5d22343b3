import { useState } from 'preact/hooks';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { SelectFilter, TextFilter } from '../../components/filter-controls.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { SortHeader } from '../../components/sort-header.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';
import { CreateUserForm } from './create-user-form.tsx';
import { ROLES, type UserItem } from './user-types.ts';

/** GET /api/v1/admin/users with search, filters, sorting and pages; and the create form. */
export function UsersPage() {
  const { filters, set, setPage, query } = useListQuery({
    search: '',
    role: '',
    status: '',
    sort: 'created_at',
    order: 'desc',
  });
  const [created, setCreated] = useState<string | null>(null);
  const list = useApi<{ users: UserItem[]; pagination: Pagination }>('/admin/users', {
    query: { ...query, per_page: 20 },
  });
  const onSort = (field: string, order: 'asc' | 'desc') => {
    set('sort')(field);
    set('order')(order);
  };
  const sortable = (label: string, field: string) => (
    <SortHeader
      label={label}
      field={field}
      sort={filters.sort}
      order={filters.order as 'asc' | 'desc'}
      onSort={onSort}
    />
  );
  return (
    <Page title="Users" actions={<Link to="/account">Your API keys and sessions</Link>}>
      <div class="filters">
        <TextFilter
          label="Search"
          type="search"
          value={filters.search}
          placeholder="Name, e-mail, username"
          onChange={set('search')}
        />
        <SelectFilter label="Role" value={filters.role} onChange={set('role')} options={ROLES} />
        <SelectFilter
          label="Status"
          value={filters.status}
          onChange={set('status')}
          options={['active', 'inactive', 'suspended']}
        />
      </div>
      <ApiView state={list} what="Users" endpoint="GET /api/v1/admin/users">
        {(d) => (
          <DataTable
            caption="Users"
            columns={[
              sortable('Username', 'username'),
              sortable('E-mail', 'email'),
              'Roles',
              'Status',
              sortable('Created', 'created_at'),
              sortable('Last login', 'last_login'),
            ]}
            rows={d.users}
            empty="No users match."
            pagination={d.pagination}
            onPage={setPage}
            row={(u) => (
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
            )}
          />
        )}
      </ApiView>
      <details class="panel">
        <summary>Create user</summary>
        <SuccessNotice>
          {created ? (
            <>
              User <strong>{created}</strong> created.
            </>
          ) : null}
        </SuccessNotice>
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
