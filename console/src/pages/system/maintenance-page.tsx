import { useEffect, useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Field } from '../../components/field.tsx';
import { Page } from '../../components/page.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';

interface Maintenance {
  enabled: boolean;
  message: string;
  estimated_duration_minutes: number | null;
  estimated_end: string | null;
  allow_admin_access: boolean;
  started_at: string | null;
  updated_by: string | null;
}

/** Maintenance mode: while on, everyone but admins (if allowed) gets 423 SYSTEM_LOCKED. */
export function MaintenancePage() {
  const state = useApi<Maintenance>('/admin/system/maintenance', { refreshMs: REFRESH.slow });
  const [message, setMessage] = useState('');
  const [minutes, setMinutes] = useState('30');
  const [allowAdmins, setAllowAdmins] = useState(true);
  useEffect(() => {
    if (state.data?.enabled) {
      setMessage(state.data.message);
      setAllowAdmins(state.data.allow_admin_access);
    }
  }, [state.data]);
  const turnOn = useAction(async () => {
    await post('/admin/system/maintenance', {
      enabled: true,
      message,
      allow_admin_access: allowAdmins,
      ...(minutes ? { estimated_duration_minutes: Number(minutes) } : {}),
    });
    state.reload();
  });
  const turnOff = useAction(async () => {
    await post('/admin/system/maintenance', { enabled: false });
    state.reload();
  });
  const errors = turnOn.error?.fieldErrors ?? {};
  return (
    <Page title="Maintenance">
      <ApiView state={state} what="Maintenance mode" endpoint="GET /api/v1/admin/system/maintenance">
        {(m) => (
          <>
            <p data-testid="maintenance-state">
              Maintenance mode is <Badge value={m.enabled ? 'on' : 'off'} />
              {m.enabled ? (
                <>
                  {' '}
                  since {formatTime(m.started_at)} (by {m.updated_by ?? 'unknown'}); expected end{' '}
                  {formatTime(m.estimated_end)}.
                </>
              ) : null}
            </p>
            {m.enabled ? (
              <div class="actions">
                <button
                  type="button"
                  class="primary"
                  disabled={turnOff.busy}
                  onClick={() => void turnOff.run()}
                >
                  Turn maintenance off
                </button>
              </div>
            ) : (
              <ActionForm
                label="Turn maintenance on"
                action={turnOn}
                submit="Turn maintenance on"
                submitClass="danger"
                errorTitle="Could not turn maintenance on"
              >
                <Field label="Message to users" error={errors['message']}>
                  {(p) => <input {...p} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />}
                </Field>
                <Field label="Expected duration (minutes)" error={errors['estimated_duration_minutes']}>
                  {(p) => (
                    <input
                      {...p}
                      type="number"
                      min={0}
                      value={minutes}
                      onInput={(e) => setMinutes(e.currentTarget.value)}
                    />
                  )}
                </Field>
                <label class="check-label">
                  <input
                    type="checkbox"
                    checked={allowAdmins}
                    onChange={(e) => setAllowAdmins(e.currentTarget.checked)}
                  />{' '}
                  Admins keep full access
                </label>
              </ActionForm>
            )}
          </>
        )}
      </ApiView>
      <ErrorNotice error={turnOff.error} title="Could not turn maintenance off" />
    </Page>
  );
}
