import { useState } from 'preact/hooks';
import { del, post } from '../../api/client.ts';
import { passwordChanged, sessionState } from '../../api/session.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Field } from '../../components/field.tsx';
import { Page } from '../../components/page.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { ApiKeysSection } from './api-keys-section.tsx';

interface Session {
  id: string;
  device: string;
  ip_address: string;
  created_at: string;
  last_activity: string;
  expires_at: string;
  is_active: boolean;
  is_current: boolean;
}

function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [ok, setOk] = useState(false);
  const change = useAction(async () => {
    await post('/auth/change-password', { current_password: current, new_password: next });
    setCurrent('');
    setNext('');
    setOk(true);
    passwordChanged();
  });
  const errors = change.error?.fieldErrors ?? {};
  return (
    <ActionForm
      label="Change password"
      action={change}
      submit="Change password"
      errorTitle="Could not change the password"
      beforeRun={() => setOk(false)}
    >
      <h2>Password</h2>
      <SuccessNotice>{ok ? 'Password changed.' : null}</SuccessNotice>
      <Field label="Current password" error={errors['current_password']}>
        {(p) => (
          <input
            {...p}
            type="password"
            autoComplete="current-password"
            required
            value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="New password" error={errors['new_password']} hint="At least 10 characters">
        {(p) => (
          <input
            {...p}
            type="password"
            autoComplete="new-password"
            required
            value={next}
            onInput={(e) => setNext(e.currentTarget.value)}
          />
        )}
      </Field>
    </ActionForm>
  );
}

/** The signed-in operator's own password, sessions and API keys. */
export function AccountPage() {
  const sessions = useApi<{ sessions: Session[] }>('/auth/sessions');
  const revoke = useAction(async (id: string) => {
    await del(`/auth/sessions/${encodeURIComponent(id)}`);
    sessions.reload();
  });
  const user = sessionState().user;
  return (
    <Page title="Account">
      <p>
        Signed in as <strong>{user?.username}</strong> ({user?.roles.join(', ')}).
      </p>
      <ChangePassword />
      <h2>Sessions</h2>
      <ApiView state={sessions} what="Sessions" endpoint="GET /api/v1/auth/sessions">
        {(d) => (
          <DataTable
            caption="Your sessions"
            columns={['Device', 'Address', 'Started', 'Last activity', 'State', ACTIONS]}
            rows={d.sessions}
            empty="No sessions."
            row={(s) => (
              <tr key={s.id}>
                <td>{s.device || '—'}</td>
                <td>{s.ip_address}</td>
                <td>{formatTime(s.created_at)}</td>
                <td>{formatTime(s.last_activity)}</td>
                <td>
                  {s.is_current ? (
                    <Badge value="current" />
                  ) : (
                    <Badge value={s.is_active ? 'active' : 'inactive'} />
                  )}
                </td>
                <td>
                  {s.is_active && !s.is_current ? (
                    <button type="button" onClick={() => void revoke.run(s.id)}>
                      Revoke
                    </button>
                  ) : null}
                </td>
              </tr>
            )}
          />
        )}
      </ApiView>
      <ErrorNotice error={revoke.error} title="Could not revoke the session" />
      <ApiKeysSection />
    </Page>
  );
}
