import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { CheckboxGroup } from '../../components/checkbox-group.tsx';
import { Field } from '../../components/field.tsx';
import { useAction } from '../../hooks/use-action.ts';
import { randomPassword } from '../../random-password.ts';
import { ROLES } from './user-types.ts';

/** POST /api/v1/admin/users; problems are shown beside the field they concern. */
export function CreateUserForm({ onCreated }: { onCreated: (id: string, username: string) => void }) {
  const [form, setForm] = useState({
    username: '',
    email: '',
    full_name: '',
    password: '',
    roles: ['user'] as string[],
    force_password_change: true,
    send_welcome_email: false,
  });
  const create = useAction(async () => {
    const res = await post<{ user: { id: string; username: string } }>('/admin/users', form);
    onCreated(res.user.id, res.user.username);
    setForm({ ...form, username: '', email: '', full_name: '', password: '' });
  });
  const errors = create.error?.fieldErrors ?? {};
  const set = (k: keyof typeof form) => (e: { currentTarget: HTMLInputElement }) =>
    setForm({ ...form, [k]: e.currentTarget.value });
  return (
    <ActionForm
      label="Create user"
      action={create}
      submit="Create user"
      submitClass="primary"
      errorTitle="Could not create the user"
    >
      <Field label="Username" error={errors['username']}>
        {(p) => <input {...p} name="username" required value={form.username} onInput={set('username')} />}
      </Field>
      <Field label="E-mail" error={errors['email']}>
        {(p) => <input {...p} name="email" type="email" required value={form.email} onInput={set('email')} />}
      </Field>
      <Field label="Full name" error={errors['full_name']}>
        {(p) => <input {...p} name="full_name" value={form.full_name} onInput={set('full_name')} />}
      </Field>
      <Field label="Password" error={errors['password']} hint="At least 10 characters">
        {(p) => (
          <span class="input-with-button">
            <input
              {...p}
              name="password"
              type="text"
              required
              value={form.password}
              onInput={set('password')}
            />
            <button type="button" onClick={() => setForm({ ...form, password: randomPassword() })}>
              Generate
            </button>
          </span>
        )}
      </Field>
      <CheckboxGroup
        legend="Roles"
        options={ROLES}
        value={form.roles}
        onChange={(roles) => setForm({ ...form, roles })}
        error={errors['roles']}
      />
      <fieldset>
        <legend>Options</legend>
        <label class="check-label">
          <input
            type="checkbox"
            checked={form.force_password_change}
            onChange={(e) => setForm({ ...form, force_password_change: e.currentTarget.checked })}
          />{' '}
          Must change password at first login
        </label>
        <label class="check-label">
          <input
            type="checkbox"
            checked={form.send_welcome_email}
            onChange={(e) => setForm({ ...form, send_welcome_email: e.currentTarget.checked })}
          />{' '}
          Send a welcome e-mail
        </label>
      </fieldset>
    </ActionForm>
  );
}
