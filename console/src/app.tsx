import { useEffect, useState } from 'preact/hooks';
import { onSessionChange, restoreSession, type SessionState, sessionState } from './api/session.ts';
import { Layout } from './components/layout.tsx';
import { Link } from './components/link.tsx';
import { LoginPage } from './pages/login-page.tsx';
import { useRoute } from './router.ts';
import { routeFor } from './routes.tsx';

/** Restores the tab's session if it can, then shows the login form or the console. */
export function App() {
  const [session, setSession] = useState<SessionState>(sessionState);
  const [restoring, setRestoring] = useState(true);
  const route = useRoute();
  useEffect(() => {
    const off = onSessionChange(setSession);
    void restoreSession().finally(() => setRestoring(false));
    return off;
  }, []);
  if (restoring) {
    return (
      <p class="muted center" aria-busy="true">
        Loading…
      </p>
    );
  }
  if (!session.user) return <LoginPage reason={session.endedBecause} />;
  return (
    <Layout path={route.path} user={session.user}>
      {session.passwordChangeRequired && route.path !== '/account' ? (
        <p class="notice notice-warn" role="alert">
          Your password must be changed. <Link to="/account">Change it now</Link>.
        </p>
      ) : null}
      {routeFor(route)}
    </Layout>
  );
}
