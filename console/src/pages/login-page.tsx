import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { login } from '../api/session.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Field } from '../components/field.tsx';
import { useAction } from '../hooks/use-action.ts';

/** Log in with the platform's own accounts (POST /api/v1/auth/login). */
export function LoginPage({ reason }: { reason: string | null }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const submit = useAction(() => login(username.trim(), password));
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => {
    document.title = 'Log in · Platform console';
  }, []);
  // `autofocus` works only on a document's first load: after a logout the form is drawn into a page that had
  // focus elsewhere, so the first field is focused here (a layout effect, before the focus keeper looks).
  useLayoutEffect(() => {
    first.current?.focus();
  }, []);
  return (
    <main class="login">
      <form
        class="card login-card"
        onSubmit={(e) => {
          e.preventDefault();
          void submit.run();
        }}
      >
        <h1>Platform console</h1>
        {reason ? (
          <p class="notice notice-muted" role="status">
            {reason}
          </p>
        ) : null}
        <Field label="Username or e-mail">
          {(p) => (
            <input
              {...p}
              ref={first}
              name="username"
              autoComplete="username"
              required
              // biome-ignore lint/a11y/noAutofocus: typing the username is the only thing to do on this page
              autoFocus
              value={username}
              onInput={(e) => setUsername(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Password">
          {(p) => (
            <input
              {...p}
              name="password"
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          )}
        </Field>
        <ErrorNotice error={submit.error} title="Login failed" />
        <button type="submit" class="primary" disabled={submit.busy}>
          {submit.busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}
