/**
 * Every method + path of the interface: the endpoint tables of the spec (platform-api.md §4.1–§4.4, §5.7)
 * and the paths that decisions.md fixes (§1 PATCH beside PUT, §2 auth and API keys, §4 webhooks, replay and
 * purge status, §5 plugin paths, §6 administration paths), and the project's own additions. Kept here, in the
 * project, so the suite never reads the shared spec; `source` says where each row comes from.
 */
export interface InterfaceRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  source: string;
}

const route = (method: InterfaceRoute['method'], path: string, source: string): InterfaceRoute => ({
  method,
  path: `/api/v1${path}`,
  source,
});

export const INTERFACE_ROUTES: readonly InterfaceRoute[] = [
  // §4.1 core operations
  route('GET', '/status', '§4.1'),
  route('GET', '/health', '§4.1'),
  route('GET', '/config', '§4.1'),
  route('PUT', '/config', '§4.1'),
  route('PATCH', '/config', 'decisions §1 (PATCH beside PUT)'),
  route('GET', '/metrics', '§4.1'),
  route('GET', '/metrics/summary', '§4.1'),
  route('GET', '/services', '§4.1'),
  route('GET', '/services/{service_name}', '§4.1'),
  route('POST', '/services/{service_name}/restart', '§4.1'),
  route('GET', '/components/health', '§4.1'),
  route('POST', '/components/diagnostics', '§4.1'),
  route('GET', '/cache/status', '§4.1'),
  route('DELETE', '/cache', '§4.1'),
  route('GET', '/tasks', '§4.1'),
  route('GET', '/tasks/{task_id}', '§4.1'),
  route('DELETE', '/tasks/{task_id}', '§4.1'),
  route('GET', '/security/status', '§4.1'),
  route('POST', '/security/scan', '§4.1'),
  route('POST', '/backup', '§4.1'),
  route('GET', '/backup', '§4.1'),
  route('POST', '/backup/{backup_id}/restore', '§4.1'),
  route('GET', '/backup/{backup_id}/download', 'decisions §6'),
  route('GET', '/security/scan/{scan_id}', 'decisions §6'),
  route('GET', '/ready', 'decisions §6'),

  // §4.2 administrative operations
  route('GET', '/admin/users', '§4.2'),
  route('GET', '/admin/users/{user_id}', '§4.2'),
  route('POST', '/admin/users', '§4.2'),
  route('PUT', '/admin/users/{user_id}', '§4.2'),
  route('PATCH', '/admin/users/{user_id}', 'decisions §1 (PATCH beside PUT)'),
  route('POST', '/admin/users/{user_id}/suspend', '§4.2'),
  route('POST', '/admin/users/{user_id}/reset-password', '§4.2'),
  route('GET', '/admin/plugins', '§4.2'),
  route('POST', '/admin/plugins/install', '§4.2'),
  route('POST', '/admin/plugins/{plugin_id}/enable', '§4.2'),
  route('POST', '/admin/plugins/{plugin_id}/update', '§4.2'),
  route('PUT', '/admin/config', '§4.2'),
  route('PATCH', '/admin/config', 'decisions §1 (PATCH beside PUT)'),
  route('POST', '/admin/security/block-ip', '§4.2'),
  route('POST', '/admin/backup', '§4.2'),
  route('POST', '/admin/backup/{backup_id}/restore', '§4.2'),
  route('POST', '/admin/system/restart', '§4.2'),
  route('POST', '/admin/system/maintenance', '§4.2'),
  route('POST', '/admin/system/clear-cache', '§4.2'),
  // §4.2 operations without a path, placed by decisions §5 and §6
  route('GET', '/admin/plugins/{plugin_id}', 'decisions §5'),
  route('POST', '/admin/plugins/{plugin_id}/disable', 'decisions §5'),
  route('DELETE', '/admin/plugins/{plugin_id}', 'decisions §5'),
  route('GET', '/admin/plugins/available', 'decisions §5'),
  route('GET', '/admin/config', 'decisions §6'),
  route('POST', '/admin/config/reload', 'decisions §6'),
  route('GET', '/admin/system/health', 'decisions §6'),
  route('GET', '/admin/system/metrics', 'decisions §6'),
  route('GET', '/admin/system/logs', 'decisions §6'),
  route('GET', '/admin/system/performance', 'decisions §6'),
  route('GET', '/admin/security/alerts', 'decisions §6'),
  route('GET', '/admin/security/blocked-ips', 'decisions §6'),
  route('DELETE', '/admin/security/blocked-ips/{ip}', 'decisions §6'),
  route('GET', '/admin/audit-log', 'decisions §6'),
  route('GET', '/admin/backup', 'decisions §6'),
  route('GET', '/admin/backup/{backup_id}/download', 'decisions §6'),
  route('GET', '/admin/analytics/users', 'decisions §6'),

  // §4.3 events
  route('POST', '/events', '§4.3'),
  route('GET', '/events/{event_id}', '§4.3'),
  route('GET', '/events', '§4.3'),
  route('POST', '/events/subscriptions', '§4.3'),
  route('GET', '/events/subscriptions', '§4.3'),
  route('PUT', '/events/subscriptions/{subscription_id}', '§4.3'),
  route('PATCH', '/events/subscriptions/{subscription_id}', 'decisions §1 (PATCH beside PUT)'),
  route('DELETE', '/events/subscriptions/{subscription_id}', '§4.3'),
  route('GET', '/events/subscriptions/{subscription_id}/deliveries', 'docs/webhooks.md (project addition)'),
  route('GET', '/events/types', 'docs/events.md, event catalogue (project addition)'),
  route('GET', '/events/types/{event_type}', 'docs/events.md, event catalogue (project addition)'),
  route('PUT', '/events/types/{event_type}', 'docs/events.md, event catalogue (project addition)'),
  route('DELETE', '/events/types/{event_type}', 'docs/events.md, event catalogue (project addition)'),
  route('GET', '/events/stream', '§4.3'),
  route('GET', '/events/stats', '§4.3'),
  route('GET', '/events/health', '§4.3'),
  route('POST', '/events/replay', '§4.3'),
  route('GET', '/events/replay/{replay_id}', '§4.3'),
  route('POST', '/events/purge', '§4.3'),
  route('GET', '/events/purge/{purge_id}', 'decisions §4'),
  route('GET', '/events/{event_id}/audit', '§4.3'),

  // §4.4 resource API and webhooks
  route('GET', '/plugins', '§4.4'),
  route('POST', '/plugins', '§4.4'),
  route('GET', '/plugins/{plugin_id}', '§4.4'),
  route('PUT', '/plugins/{plugin_id}', '§4.4'),
  route('PATCH', '/plugins/{plugin_id}', 'decisions §1, §5 (PATCH beside PUT)'),
  route('DELETE', '/plugins/{plugin_id}', '§4.4'),
  route('GET', '/users', '§4.4'),
  route('POST', '/users', '§4.4'),
  route('GET', '/users/{user_id}', '§4.4'),
  route('PUT', '/users/{user_id}', '§4.4'),
  route('PATCH', '/users/{user_id}', 'decisions §1 (PATCH beside PUT)'),
  route('DELETE', '/users/{user_id}', '§4.4'),
  route('POST', '/webhooks', '§4.4'),
  route('GET', '/webhooks', 'decisions §4'),
  route('DELETE', '/webhooks/{webhook_id}', 'decisions §4'),

  // §5.7 authentication, decisions §2
  route('POST', '/auth/login', '§5.7'),
  route('POST', '/auth/logout', '§5.7'),
  route('POST', '/auth/refresh', 'decisions §2'),
  route('GET', '/auth/me', 'decisions §2'),
  route('POST', '/auth/change-password', 'decisions §2'),
  route('GET', '/auth/sessions', 'decisions §2'),
  route('DELETE', '/auth/sessions/{session_id}', 'decisions §2'),
  route('GET', '/auth/api-keys', 'decisions §2'),
  route('POST', '/auth/api-keys', 'decisions §2'),
  route('DELETE', '/auth/api-keys/{key_id}', 'decisions §2'),
];

/** Turns `/api/v1/tasks/{task_id}` into `/api/v1/tasks/{}` so parameter names do not matter when comparing. */
export function pathShape(path: string): string {
  return path.replace(/\{[^}]+\}/g, '{}');
}
