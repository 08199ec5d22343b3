import { useState } from 'preact/hooks';
import { del } from '../../api/client.ts';
import { useOperation } from '../../api/operations.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { navigate } from '../../router.ts';
import { EditUserForm, ResetPasswordForm, SuspendForm } from './user-actions.tsx';
import type { UserDetail } from './user-types.ts';

function Details({ u }: { u: UserDetail }) {
  return (
    <dl class="kv wide">
      <div>
        <dt>Id</dt>
        <dd>
          <code>{u.id}</code>
        </dd>
      </div>
      <div>
        <dt>Status</dt>
        <dd>
          <Badge value={u.status} />
        </dd>
      </div>
      <div>
        <dt>E-mail</dt>
        <dd>
          {u.email} {u.email_verified ? <span class="muted">(verified)</span> : null}
        </dd>
      </div>
      <div>
        <dt>Roles</dt>
        <dd>{u.roles.join(', ')}</dd>
      </div>
      <div>
        <dt>Permissions</dt>
        <dd>{(u.permissions ?? []).join(', ') || '—'}</dd>
      </div>
      <div>
        <dt>Last login</dt>
        <dd>{formatTime(u.last_login)}</dd>
      </div>
      <div>
        <dt>Logins</dt>
        <dd>{formatNumber(u.login_count)}</dd>
      </div>
      <div>
        <dt>Failed logins</dt>
        <dd>{formatNumber(u.metadata?.['failed_login_attempts'] as number | undefined)}</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd>{formatTime(u.created_at)}</dd>
      </div>
    </dl>
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
              {saved ? (
                <p class="notice notice-good" role="status">
                  {saved}
                </p>
              ) : null}
              <Details u={u} />
              <h3>Sessions</h3>
              {(u.sessions ?? []).length === 0 ? (
                <p class="muted">No sessions.</p>
              ) : (
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Device</th>
                        <th scope="col">Address</th>
                        <th scope="col">Last activity</th>
                        <th scope="col">Active</th>
                      </tr>
                    </thead>
                    <tbody>
                      {(u.sessions ?? []).map((s) => (
                        <tr key={s.id}>
                          <td>{s.device}</td>
                          <td>{s.ip_address}</td>
                          <td>{formatTime(s.last_activity)}</td>
                          <td>
                            <Badge value={s.is_active} />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
              <h3>API keys</h3>
              {(u.api_keys ?? []).length === 0 ? (
                <p class="muted">No API keys.</p>
              ) : (
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Name</th>
                        <th scope="col">Key</th>
                        <th scope="col">Last used</th>
                        <th scope="col">Active</th>
                      </tr>
                    </thead>
                    <tbody>
                      {(u.api_keys ?? []).map((k) => (
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
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
              <details class="panel">
                <summary>Edit</summary>
                <RequiresOperation operation="PUT /api/v1/admin/users/{}" what="Editing users">
                  <EditUserForm user={u} onSaved={done('Changes saved.')} />
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
