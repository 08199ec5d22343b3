import type { ComponentChildren } from 'preact';
import { Link } from './components/link.tsx';
import { Page } from './components/page.tsx';
import { AccountPage } from './pages/account/account-page.tsx';
import { BackupsPage } from './pages/backups/backups-page.tsx';
import { ConfigPage } from './pages/config/config-page.tsx';
import { EventTypesPage } from './pages/event-types/event-types-page.tsx';
import { EventDetailPage } from './pages/events/event-detail-page.tsx';
import { EventsPage } from './pages/events/events-page.tsx';
import { ReplayPurgePage } from './pages/events/replay-purge-page.tsx';
import { OverviewPage } from './pages/overview/overview-page.tsx';
import { ServiceDetailsPage } from './pages/overview/service-details-page.tsx';
import { PluginDetailPage } from './pages/plugins/plugin-detail-page.tsx';
import { PluginsPage } from './pages/plugins/plugins-page.tsx';
import { SecurityPage } from './pages/security/security-page.tsx';
import { SubscriptionDetailPage } from './pages/subscriptions/subscription-detail-page.tsx';
import { SubscriptionsPage } from './pages/subscriptions/subscriptions-page.tsx';
import { AuditPage } from './pages/system/audit-page.tsx';
import { LogsPage } from './pages/system/logs-page.tsx';
import { MaintenancePage } from './pages/system/maintenance-page.tsx';
import { TaskDetailPage } from './pages/tasks/task-detail-page.tsx';
import { TasksPage } from './pages/tasks/tasks-page.tsx';
import { UserDetailPage } from './pages/users/user-detail-page.tsx';
import { UsersPage } from './pages/users/users-page.tsx';
import { match, type Route } from './router.ts';

const ROUTES: [string, (params: Record<string, string>) => ComponentChildren][] = [
  ['/', () => <OverviewPage />],
  ['/overview/details', () => <ServiceDetailsPage />],
  ['/users', () => <UsersPage />],
  ['/users/:id', (p) => <UserDetailPage key={p['id']} id={p['id']!} />],
  ['/account', () => <AccountPage />],
  ['/plugins', () => <PluginsPage />],
  ['/plugins/:id', (p) => <PluginDetailPage key={p['id']} id={p['id']!} />],
  ['/events', () => <EventsPage />],
  ['/replay-purge', () => <ReplayPurgePage />],
  ['/events/:id', (p) => <EventDetailPage key={p['id']} id={p['id']!} />],
  ['/event-types', () => <EventTypesPage />],
  ['/subscriptions', () => <SubscriptionsPage />],
  ['/subscriptions/:id', (p) => <SubscriptionDetailPage key={p['id']} id={p['id']!} />],
  ['/tasks', () => <TasksPage />],
  ['/tasks/:id', (p) => <TaskDetailPage key={p['id']} id={p['id']!} />],
  ['/backups', () => <BackupsPage />],
  ['/security', () => <SecurityPage />],
  ['/config', () => <ConfigPage />],
  ['/maintenance', () => <MaintenancePage />],
  ['/audit', () => <AuditPage />],
  ['/logs', () => <LogsPage />],
];

/** The page for a client route; an unknown route gets a page saying so, with a way back. */
export function routeFor(route: Route): ComponentChildren {
  for (const [pattern, render] of ROUTES) {
    const params = match(pattern, route.path);
    if (params) return render(params);
  }
  return (
    <Page title="Page not found">
      <p>
        The console has no page at <code>{route.path}</code>. <Link to="/">Go to the overview</Link>.
      </p>
    </Page>
  );
}
