import { useState } from 'preact/hooks';
import { post, put } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { CheckboxGroup } from '../../components/checkbox-group.tsx';
import { Field } from '../../components/field.tsx';
import { OnceSecret } from '../../components/once-secret.tsx';
import { useAction } from '../../hooks/use-action.ts';
import { randomPassword } from '../../random-password.ts';
import { ROLES, type UserDetail } from './user-types.ts';

const base = (id: string) => `/admin/users/${encodeURIComponent(id)}`;

/** PUT /api/v1/admin/users/{id}: e-mail, full name, roles and status. */
export function EditUserForm({ user, onSaved }: { user: UserDetail; onSaved: () => void }) {
  const [form, setForm] = useState({
    email: user.email,
    full_name: user.full_name,
    roles: user.roles,
    status: user.status,
  });
  const save = useAction(async () => {
    // Only what changed: a suspended user keeps that status unless the operator picks another.
    const changes: Record<string, unknown> = {};
    if (form.email !== user.email) changes['email'] = form.email;
    if (form.full_name !== user.full_name) changes['full_name'] = form.full_name;
    if (form.roles.join() !== user.roles.join()) changes['roles'] = form.roles;
    if (form.status !== user.status) changes['status'] = form.status;
    if (Object.keys(changes).length > 0) await put(base(user.id), changes);
    onSaved();
  });
  const errors = save.error?.fieldErrors ?? {};
  return (
    <ActionForm
      label="Edit user"
      action={save}
      submit="Save changes"
      submitClass="primary"
      errorTitle="Could not save"
    >
      <Field label="E-mail" error={errors['email']}>
        {(p) => (
          <input
            {...p}
            type="email"
            value={form.email}
            onInput={(e) => setForm({ ...form, email: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field label="Full name" error={errors['full_name']}>
        {(p) => (
          <input
            {...p}
            value={form.full_name}
            onInput={(e) => setForm({ ...form, full_name: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field label="Status" error={errors['status']}>
        {(p) => (
          <select
            {...p}
            value={form.status}
            onChange={(e) => setForm({ ...form, status: e.currentTarget.value })}
          >
            <option>active</option>
            <option>inactive</option>
            <option>suspended</option>
          </select>
        )}
      </Field>
      <CheckboxGroup
        legend="Roles"
        options={ROLES}
        value={form.roles}
        onChange={(roles) => setForm({ ...form, roles })}
      />
    </ActionForm>
  );
}

/** POST /api/v1/admin/users/{id}/suspend: ends the user's sessions and keys at once. */
export function SuspendForm({ user, onDone }: { user: UserDetail; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const [days, setDays] = useState('');
  const [notify, setNotify] = useState(false);
  const suspend = useAction(async () => {
    await post(`${base(user.id)}/suspend`, {
      reason,
      ...(days ? { duration_days: Number(days) } : {}),
      notify_user: notify,
    });
    onDone();
  });
  const errors = suspend.error?.fieldErrors ?? {};
  return (
    <ActionForm
      label="Suspend user"
      action={suspend}
      submit={`Suspend ${user.username}`}
      submitClass="danger"
      disabled={user.status === 'suspended'}
      errorTitle="Could not suspend"
    >
      <Field label="Reason" error={errors['reason']}>
        {(p) => <input {...p} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />}
      </Field>
      <Field label="Duration (days)" error={errors['duration_days']} hint="Empty or 0: until lifted">
        {(p) => (
          <input {...p} type="number" min={0} value={days} onInput={(e) => setDays(e.currentTarget.value)} />
        )}
      </Field>
      <label class="check-label">
        <input type="checkbox" checked={notify} onChange={(e) => setNotify(e.currentTarget.checked)} /> Notify
        the user by e-mail
      </label>
    </ActionForm>
  );
}

/** POST /api/v1/admin/users/{id}/reset-password with a temporary password shown once. */
export function ResetPasswordForm({ user }: { user: UserDetail }) {
  const [temporary, setTemporary] = useState('');
  const [force, setForce] = useState(true);
  const [sendEmail, setSendEmail] = useState(false);
  const [shown, setShown] = useState<string | null>(null);
  const reset = useAction(async () => {
    const res = await post<{ temporary_password?: string }>(`${base(user.id)}/reset-password`, {
      ...(temporary ? { temporary_password: temporary } : {}),
      force_change_on_login: force,
      send_email: sendEmail,
    });
    setShown(res?.temporary_password ?? temporary);
    setTemporary('');
  });
  const errors = reset.error?.fieldErrors ?? {};
  return (
    <ActionForm
      label="Reset password"
      action={reset}
      submit="Reset password"
      errorTitle="Could not reset the password"
    >
      {shown ? (
        <OnceSecret
          label={`Temporary password for ${user.username}`}
          value={shown}
          onDismiss={() => setShown(null)}
        />
      ) : null}
      <Field
        label="Temporary password"
        error={errors['temporary_password']}
        hint="Empty: the platform generates one and shows it once"
      >
        {(p) => (
          <span class="input-with-button">
            <input {...p} value={temporary} onInput={(e) => setTemporary(e.currentTarget.value)} />
            <button type="button" onClick={() => setTemporary(randomPassword())}>
              Generate
            </button>
          </span>
        )}
      </Field>
      <label class="check-label">
        <input type="checkbox" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} /> Must
        change it at next login
      </label>
      <label class="check-label">
        <input type="checkbox" checked={sendEmail} onChange={(e) => setSendEmail(e.currentTarget.checked)} />{' '}
        Send it by e-mail
      </label>
    </ActionForm>
  );
}
