import type { TestPlatform } from '../helpers/test-platform.js';

/** One valid call of an admin mutation route: the URL with its parameters filled in, and a body. */
export interface SampleCall {
  url: string;
  body?: unknown;
}

/**
 * A sample builds its call; it may first create what the call needs (a user to suspend, an alert to resolve).
 * Whatever it creates on the way may audit too: only the sample call itself is counted.
 */
export type Sample = (t: TestPlatform, admin: string) => Promise<SampleCall>;

/** Routes the walker leaves out on purpose, with the reason. Keep this short. */
export const EXCLUDED: Record<string, string> = {
  // A restore replaces the database, audit log included, so "one new entry" cannot be counted across it;
  // test/backups covers its audit entry.
  'POST /api/v1/admin/backup/{backup_id}/restore': 'replaces the audit log it would be counted in',
};

let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

async function newUser(t: TestPlatform, admin: string): Promise<string> {
  const name = unique('walk');
  const res = await t.request('POST', '/api/v1/admin/users', {
    token: admin,
    body: { username: name, email: `${name}@walk.test`, password: 'walker-password-1' },
  });
  if (res.statusCode !== 201) throw new Error(`could not create a user for the walk: ${res.body}`);
  return res.data.data.user.id as string;
}

async function openAlert(t: TestPlatform, admin: string): Promise<string> {
  const name = unique('walk-admin');
  await t.request('POST', '/api/v1/admin/users', {
    token: admin,
    body: { username: name, email: `${name}@walk.test`, password: 'walker-password-1', roles: ['admin'] },
  });
  const deadline = Date.now() + 5000;
  for (;;) {
    const res = await t.request('GET', '/api/v1/admin/security/alerts?status=open&type=new_admin_user', {
      token: admin,
    });
    const alert = (res.data.data.alerts as { id: string; affected_resources: string[] }[]).find((a) =>
      a.affected_resources.includes(`user:${name}`),
    );
    if (alert) return alert.id;
    if (Date.now() > deadline) throw new Error('no alert was raised for the walk');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The bundled `scheduler` plugin, installed (and enabled or not) before a plugin sample call. */
async function bundledPlugin(
  t: TestPlatform,
  admin: string,
  state: 'absent' | 'disabled' | 'enabled',
): Promise<void> {
  const current = await t.request('GET', '/api/v1/admin/plugins/scheduler', { token: admin });
  if (current.statusCode === 200)
    await t.request('DELETE', '/api/v1/admin/plugins/scheduler', { token: admin });
  if (state === 'absent') return;
  const res = await t.request('POST', '/api/v1/admin/plugins/install', {
    token: admin,
    body: { plugin_name: 'scheduler', enabled: state === 'enabled' },
  });
  if (res.statusCode !== 201) throw new Error(`could not install a plugin for the walk: ${res.body}`);
}

/**
 * A valid call for every admin mutation route (`METHOD /openapi/path`). A module that adds an admin mutation
 * route adds its sample here, so the audit walk covers it.
 */
export const SAMPLES: Record<string, Sample> = {
  'POST /api/v1/admin/users': async () => {
    const name = unique('walk-new');
    return {
      url: '/api/v1/admin/users',
      body: { username: name, email: `${name}@walk.test`, password: 'walker-password-1' },
    };
  },
  'PUT /api/v1/admin/users/{user_id}': async (t, admin) => ({
    url: `/api/v1/admin/users/${await newUser(t, admin)}`,
    body: { full_name: 'Walked Over' },
  }),
  'PATCH /api/v1/admin/users/{user_id}': async (t, admin) => ({
    url: `/api/v1/admin/users/${await newUser(t, admin)}`,
    body: { status: 'inactive' },
  }),
  'DELETE /api/v1/admin/users/{user_id}': async (t, admin) => ({
    url: `/api/v1/admin/users/${await newUser(t, admin)}`,
  }),
  'POST /api/v1/admin/users/{user_id}/suspend': async (t, admin) => ({
    url: `/api/v1/admin/users/${await newUser(t, admin)}/suspend`,
    body: { reason: 'walk', duration_days: 1, notify_user: true },
  }),
  'POST /api/v1/admin/users/{user_id}/reset-password': async (t, admin) => ({
    url: `/api/v1/admin/users/${await newUser(t, admin)}/reset-password`,
    body: { temporary_password: 'Walked-Temp-Pass-1', force_change_on_login: true, send_email: true },
  }),
  'PATCH /api/v1/admin/security/alerts/{alert_id}': async (t, admin) => ({
    url: `/api/v1/admin/security/alerts/${await openAlert(t, admin)}`,
    body: { status: 'resolved', note: 'walk' },
  }),
  'POST /api/v1/admin/security/block-ip': async () => ({
    url: '/api/v1/admin/security/block-ip',
    body: { ip_address: '203.0.113.50', reason: 'walk', duration_hours: 1, notify_admins: false },
  }),
  'DELETE /api/v1/admin/security/blocked-ips/{ip}': async (t, admin) => {
    await t.request('POST', '/api/v1/admin/security/block-ip', {
      token: admin,
      body: { ip_address: '203.0.113.51', reason: 'walk' },
    });
    return { url: `/api/v1/admin/security/blocked-ips/${encodeURIComponent('203.0.113.51')}` };
  },
  'POST /api/v1/admin/system/maintenance': async () => ({
    url: '/api/v1/admin/system/maintenance',
    body: { enabled: false },
  }),
  'POST /api/v1/admin/system/clear-cache': async () => ({
    url: '/api/v1/admin/system/clear-cache',
    body: { cache_types: ['api_responses'], pattern: 'walk:*' },
  }),
  'PUT /api/v1/admin/config': async () => ({
    url: '/api/v1/admin/config',
    body: { rate_limits: { authenticated: { max: 100_001 } } },
  }),
  'PATCH /api/v1/admin/config': async () => ({
    url: '/api/v1/admin/config',
    body: { rate_limits: { authenticated: { max: 100_002 } } },
  }),
  'POST /api/v1/admin/config/reload': async () => ({ url: '/api/v1/admin/config/reload', body: {} }),
  'POST /api/v1/admin/backup': async () => ({
    url: '/api/v1/admin/backup',
    body: {
      name: 'walk',
      include_database: true,
      include_config: true,
      include_plugins: false,
      include_logs: false,
    },
  }),
  'POST /api/v1/admin/plugins/install': async (t, admin) => {
    await bundledPlugin(t, admin, 'absent');
    return { url: '/api/v1/admin/plugins/install', body: { plugin_name: 'scheduler', enabled: false } };
  },
  'POST /api/v1/admin/plugins/{plugin_id}/enable': async (t, admin) => {
    await bundledPlugin(t, admin, 'disabled');
    return { url: '/api/v1/admin/plugins/scheduler/enable' };
  },
  'POST /api/v1/admin/plugins/{plugin_id}/disable': async (t, admin) => {
    await bundledPlugin(t, admin, 'enabled');
    return { url: '/api/v1/admin/plugins/scheduler/disable' };
  },
  'POST /api/v1/admin/plugins/{plugin_id}/update': async (t, admin) => {
    await bundledPlugin(t, admin, 'enabled');
    return { url: '/api/v1/admin/plugins/scheduler/update', body: { version: '1.0.0' } };
  },
  'DELETE /api/v1/admin/plugins/{plugin_id}': async (t, admin) => {
    await bundledPlugin(t, admin, 'disabled');
    return { url: '/api/v1/admin/plugins/scheduler' };
  },
  'POST /api/v1/admin/system/restart': async () => ({
    url: '/api/v1/admin/system/restart',
    body: { reason: 'audit walk', delay_seconds: 0, notify_users: false },
  }),
};
