/** The console's sections, in the order the navigation shows them. */
export const NAV_ITEMS: readonly { path: string; label: string }[] = [
  { path: '/', label: 'Overview' },
  { path: '/users', label: 'Users' },
  { path: '/plugins', label: 'Plugins' },
  { path: '/events', label: 'Events' },
  { path: '/event-types', label: 'Event types' },
  { path: '/subscriptions', label: 'Subscriptions' },
  { path: '/replay-purge', label: 'Replay and purge' },
  { path: '/tasks', label: 'Tasks' },
  { path: '/backups', label: 'Backups' },
  { path: '/security', label: 'Security' },
  { path: '/config', label: 'Configuration' },
  { path: '/maintenance', label: 'Maintenance' },
  { path: '/audit', label: 'Audit log' },
  { path: '/logs', label: 'Logs' },
  { path: '/account', label: 'Account' },
];
