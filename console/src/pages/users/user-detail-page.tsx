import { useState } from 'preact/hooks';
import { del } from '../../api/client.ts';
import { useOperation } from '../../api/operations.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { navigate } from '../../router.ts';
import { EditUserForm, ResetPasswordForm, SuspendForm } from './user-actions.tsx';
import type { UserDetail } from './user-types.ts';

function Details({ u }: { u: UserDetail }) {
  return (
    <KeyValues
      variant="kv wide"
      items={[
        ['Id', <code>{u.id}</code>],
        ['Status', <Badge value={u.status} />],
        [
          'E-mail',
          <>
            {u.email} {u.email_verified ? <span class="muted">(verified)</span> : null}
          </>,
        ],
        ['Roles', u.roles.join(', ')],
        ['Permissions', (u.permissions ?? []).join(', ') || '—'],
        ['Last login', formatTime(u.last_login)],
        ['Logins', formatNumber(u.login_count)],
        ['Failed logins', formatNumber(u.metadata?.['failed_login_attempts'] as number | undefined)],
        ['Created', formatTime(u.created_at)],
      ]}
    />
  );
}

/** One user: details, sessions and API keys, and the admin actions on them. */
export function UserDetailPage({ id }: { id: string }) {
  const [saved, setSaved] = useState<string | null>(null);
  const state = useApi<{ user?: UserDetail } & Partial<UserDetail>>(`/admin/users/${encodeURIComponent(id)}`);
  const canDelete = useOperation('DELETE /api/v1/admin/users/{}');
  const remove = useAction(async () => {
    await del(`/admin/users/${encodeURIComponent(id)}`);
    navigate('/users');
  });
  const done = (msg: string) => () => {
    setSaved(msg);
    state.reload();
  };
  return (
    <Page title="User" actions={<Link to="/users">← All users</Link>}>
      <ApiView state={state} what="User" endpoint="GET /api/v1/admin/users/{id}">
        {(d) => {
          const u = (d.user ?? d) as UserDetail;
          return (
            <>
              <h2>{u.full_name ? `${u.full_name} (${u.username})` : u.username}</h2>
              <SuccessNotice>{saved}</SuccessNotice>
              <Details u={u} />
              <h3>Sessions</h3>
              <DataTable
                caption="Sessions"
                columns={['Device', 'Address', 'Last activity', 'Active']}
                rows={u.sessions ?? []}
                empty="No sessions."
                row={(s) => (
                  <tr key={s.id}>
                    <td>{s.device}</td>
                    <td>{s.ip_address}</td>
                    <td>{formatTime(s.last_activity)}</td>
                    <td>
                      <Badge value={s.is_active} />
                    </td>
                  </tr>
                )}
              />
              <h3>API keys</h3>
              <DataTable
                caption="API keys"
                columns={['Name', 'Key', 'Last used', 'Active']}
                rows={u.api_keys ?? []}
                empty="No API keys."
                row={(k) => (
                  <tr key={k.id}>
                    <td>{k.name}</td>
                    <td>
                      <code>{k.key_preview}</code>
                    </td>
                    <td>{formatTime(k.last_used)}</td>
                    <td>
                      <Badge value={k.is_active} />
                    </td>
                  </tr>
                )}
              />
              <details class="panel">
                <summary>Edit</summary>
                <RequiresOperation operation="PUT /api/v1/admin/users/{}" what="Editing users">
                  {/* A new form whenever the user changed (a suspension, a save): its fields start from what is
                      stored now, so a save never sends back a status or e-mail that was replaced meanwhile. */}
                  <EditUserForm
                    key={`${u.status} ${u.updated_at}`}
                    user={u}
                    onSaved={done('Changes saved.')}
                  />
                </RequiresOperation>
              </details>
              <details class="panel">
                <summary>Suspend</summary>
                <RequiresOperation operation="POST /api/v1/admin/users/{}/suspend" what="Suspending users">
                  <SuspendForm user={u} onDone={done(`${u.username} is suspended.`)} />
                </RequiresOperation>
              </details>
              <details class="panel">
                <summary>Reset password</summary>
                <RequiresOperation
                  operation="POST /api/v1/admin/users/{}/reset-password"
                  what="Password resets"
                >
                  <ResetPasswordForm user={u} />
                </RequiresOperation>
              </details>
              <div class="actions">
                {canDelete ? (
                  <ConfirmButton
                    label="Delete user"
                    title={`Delete ${u.username}?`}
                    confirmLabel="Delete"
                    danger
                    onConfirm={() => void remove.run()}
                  >
                    <p>The account, its sessions and its API keys are removed. This cannot be undone.</p>
                  </ConfirmButton>
                ) : null}
              </div>
              <ErrorNotice error={remove.error} title="Could not delete" />
            </>
          );
        }}
      </ApiView>
    </Page>
  );
}
