import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';

// The platform's own events caused by a request carry that request's id (also as correlation id, unless the
// request named one with X-Correlation-ID), user agent and client address (through a trusted proxy: the
// forwarded one), as an event emitted through POST /api/v1/events does. Events the platform raises by itself
// (a task) carry none.
describe('the provenance of platform events', () => {
  let t: TestPlatform;
  let token: string;
  const PROXY = '10.9.8.7';
  const CLIENT = '203.0.113.7';
  const UA = 'provenance-test/1.0';

  /** Headers of a request from CLIENT through the trusted proxy, with its own request id. */
  const via = (requestId: string, extra: Record<string, string> = {}) => ({
    headers: { 'user-agent': UA, 'x-forwarded-for': CLIENT, 'x-request-id': requestId, ...extra },
    remoteAddress: PROXY,
  });

  /** The newest stored event of the type whose data matches `match`, once it is stored. */
  const stored = async (type: string, match: (data: Record<string, any>) => boolean = () => true) => {
    let found: any;
    await eventually(async () => {
      const res = await t.request('GET', `/api/v1/events?event_type=${type}&per_page=100`, { token });
      found = (res.data.data.events as any[]).find((e) => match(e.data_preview ?? {}));
      return found !== undefined;
    });
    expect(found, `no stored ${type} event`).toBeDefined();
    return found;
  };

  const expectOrigin = (event: any, requestId: string, correlationId = requestId, ip = CLIENT) =>
    expect(event.metadata).toMatchObject({
      request_id: requestId,
      correlation_id: correlationId,
      user_agent: UA,
      ip_address: ip,
    });

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      { name: 'origin-probe', version: '1.0.0', permissions: ['http:routes'] },
      `export default { setup(ctx) { ctx.routes.get('/ping', () => ({ ok: true })); } };`,
    );
    t = await startPlatform({ server: { trusted_proxies: [PROXY] }, plugins: { repositories: [repo] } });
    token = await t.adminToken();
  });
  afterAll(async () => t?.close());

  it('auth.login and auth.login_failed carry the login request, the client address through the proxy', async () => {
    const ok = await t.request('POST', '/api/v1/auth/login', {
      ...via('req-origin-login'),
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.data.request_id).toBe('req-origin-login');
    expectOrigin(await stored('auth.login', (d) => d.ip_address === CLIENT), 'req-origin-login');

    // Not through a trusted proxy: the forwarded address is not believed.
    const bad = await t.request('POST', '/api/v1/auth/login', {
      headers: { 'user-agent': UA, 'x-forwarded-for': CLIENT, 'x-request-id': 'req-origin-failed' },
      remoteAddress: '198.51.100.9',
      body: { username: 'nobody-here', password: 'wrong-password-1' },
    });
    expect(bad.statusCode).toBe(401);
    expectOrigin(
      await stored('auth.login_failed', (d) => d.username === 'nobody-here'),
      'req-origin-failed',
      'req-origin-failed',
      '198.51.100.9',
    );
  });

  it('user.created / suspended / deleted carry their request, and its X-Correlation-ID', async () => {
    const created = await t.request('POST', '/api/v1/admin/users', {
      token,
      ...via('req-origin-create', { 'x-correlation-id': 'corr-onboarding-42' }),
      body: {
        username: 'origin-user',
        email: 'origin-user@example.test',
        password: 'user-password-1',
        roles: ['user'],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.data.data.user.id as string;
    expectOrigin(
      await stored('user.created', (d) => d.user_id === id),
      'req-origin-create',
      'corr-onboarding-42',
    );

    const suspended = await t.request('POST', `/api/v1/admin/users/${id}/suspend`, {
      token,
      ...via('req-origin-suspend'),
      body: { reason: 'provenance test' },
    });
    expect(suspended.statusCode, suspended.body).toBe(200);
    expectOrigin(await stored('user.suspended', (d) => d.user_id === id), 'req-origin-suspend');

    const deleted = await t.request('DELETE', `/api/v1/admin/users/${id}`, {
      token,
      ...via('req-origin-delete'),
    });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expectOrigin(await stored('user.deleted', (d) => d.user_id === id), 'req-origin-delete');
  });

  it('system.config.updated and system.maintenance.* carry their request', async () => {
    const put = await t.request('PUT', '/api/v1/config', {
      token,
      ...via('req-origin-config'),
      body: { security: { brute_force_window_minutes: 16 } },
    });
    expect(put.statusCode, put.body).toBe(200);
    expectOrigin(await stored('system.config.updated'), 'req-origin-config');

    const on = await t.request('POST', '/api/v1/admin/system/maintenance', {
      token,
      ...via('req-origin-maint-on'),
      body: { enabled: true, message: 'provenance', allow_admin_access: true },
    });
    expect(on.statusCode, on.body).toBe(200);
    const off = await t.request('POST', '/api/v1/admin/system/maintenance', {
      token,
      ...via('req-origin-maint-off'),
      body: { enabled: false },
    });
    expect(off.statusCode, off.body).toBe(200);
    expectOrigin(await stored('system.maintenance.enabled'), 'req-origin-maint-on');
    expectOrigin(await stored('system.maintenance.disabled'), 'req-origin-maint-off');
  });

  it('security.ip_blocked and the security.alert it raises carry their request', async () => {
    const res = await t.request('POST', '/api/v1/admin/security/block-ip', {
      token,
      ...via('req-origin-block'),
      body: { ip_address: '192.0.2.55', reason: 'provenance', duration_hours: 1, notify_admins: true },
    });
    expect(res.statusCode, res.body).toBe(201);
    expectOrigin(
      await stored('security.ip_blocked', (d) => d.cidr === '192.0.2.55/32' || d.ip_address === '192.0.2.55'),
      'req-origin-block',
    );
    expectOrigin(await stored('security.alert', (d) => d.type === 'ip_blocked'), 'req-origin-block');
  });

  it('plugin.installed / enabled / loaded / disabled carry their request', async () => {
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      ...via('req-origin-install'),
      body: { plugin_name: 'origin-probe', version: '1.0.0', config: {} },
    });
    expect(installed.statusCode, installed.body).toBe(201);
    const mine = (d: Record<string, any>) => d.plugin_id === 'origin-probe';
    expectOrigin(await stored('plugin.installed', mine), 'req-origin-install');
    expectOrigin(await stored('plugin.enabled', mine), 'req-origin-install');
    expectOrigin(await stored('plugin.loaded', mine), 'req-origin-install');

    const disabled = await t.request('POST', '/api/v1/admin/plugins/origin-probe/disable', {
      token,
      ...via('req-origin-disable'),
    });
    expect(disabled.statusCode, disabled.body).toBe(200);
    expectOrigin(await stored('plugin.disabled', mine), 'req-origin-disable');
  });

  it('backup.created carries the request that asked for the backup', async () => {
    const res = await t.request('POST', '/api/v1/backup', {
      token,
      ...via('req-origin-backup', { 'x-correlation-id': 'corr-nightly-check' }),
      body: { include: ['database'] },
    });
    expect(res.statusCode, res.body).toBe(201);
    expectOrigin(
      await stored('backup.created', (d) => d.backup_id === res.data.data.backup_id),
      'req-origin-backup',
      'corr-nightly-check',
    );
  });

  it('an event the platform raises by itself (a task ending) carries no request', async () => {
    const { tasks } = t.platform.context;
    tasks.registerType('test_origin_noop', () => ({ done: true }));
    const task = await tasks.start('test_origin_noop');
    const event = await stored('task.completed', (d) => d.task_id === task.id);
    expect(event.metadata).toMatchObject({ request_id: '', user_agent: '', ip_address: '' });
  });

  it('an event emitted through the API still takes its origin from its own request', async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token,
      ...via('req-origin-emit'),
      body: { event_type: 'origin.check', data: { n: 1 } },
    });
    expect(res.statusCode, res.body).toBe(201);
    expectOrigin(await stored('origin.check'), 'req-origin-emit');
  });
});
