import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

async function eventually<T>(
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Alert {
  id: string;
  type: string;
  severity: string;
  status: string;
  occurrences: number;
  affected_resources: string[];
  metadata: Record<string, unknown>;
}

describe('security alerts', () => {
  let t: TestPlatform;
  let admin: string;
  const announced: PlatformEventMap['platform.event'][] = [];
  beforeAll(async () => {
    t = await startPlatform({
      security: {
        brute_force_account_threshold: 3,
        brute_force_ip_threshold: 4,
        brute_force_window_minutes: 10,
        server_error_threshold: 2,
      },
      // The account rule must fire before the lockout (also counted per account) stops the guessing.
      auth: { max_failed_logins: 50 },
    });
    admin = await t.adminToken();
    t.platform.context.events.on('platform.event', (e) => {
      if (e.type === 'security.alert') announced.push(e);
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const alerts = async (query = ''): Promise<Alert[]> =>
    (await t.request('GET', `/api/v1/admin/security/alerts${query}`, { token: admin })).data.data.alerts;
  const failLogin = (username: string, remoteAddress = '127.0.0.1') =>
    t.request('POST', '/api/v1/auth/login', {
      body: { username, password: 'wrong-password' },
      remoteAddress,
    });

  it('raises one alert for repeated failed logins on an account, counting further attempts as occurrences', async () => {
    await t.createUser('targeted');
    for (let i = 0; i < 2; i++) await failLogin('targeted', '198.51.100.1');
    await new Promise((r) => setTimeout(r, 200));
    expect((await alerts('?type=brute_force_account')).length).toBe(0);
    await failLogin('targeted', '198.51.100.2');
    const raised = await eventually(
      () => alerts('?type=brute_force_account'),
      (a) => a.length === 1,
    );
    expect(raised[0]).toMatchObject({
      severity: 'high',
      status: 'open',
      affected_resources: ['user:targeted'],
      metadata: { username: 'targeted', failed_attempts: 3, window_minutes: 10 },
    });
    expect(raised[0]?.id).toMatch(/^alr_/);
    await failLogin('targeted', '198.51.100.3');
    const repeated = await eventually(
      () => alerts('?type=brute_force_account'),
      (a) => a[0]?.occurrences === 2,
    );
    expect(repeated).toHaveLength(1);
    expect(repeated[0]?.metadata['failed_attempts']).toBe(4);
    expect(announced.filter((e) => e.data['type'] === 'brute_force_account')).toHaveLength(1);
    expect(announced[0]).toMatchObject({
      source: 'system',
      data: { alert_id: raised[0]?.id, severity: 'high' },
    });
  });

  it('raises an alert for failed logins from one address across accounts', async () => {
    for (const name of ['spray-a', 'spray-b', 'spray-c', 'spray-d']) await failLogin(name, '192.0.2.77');
    const raised = await eventually(
      () => alerts('?type=brute_force_ip'),
      (a) => a.length === 1,
    );
    expect(raised[0]).toMatchObject({
      severity: 'high',
      affected_resources: ['ip:192.0.2.77'],
      metadata: { ip_address: '192.0.2.77', failed_attempts: 4 },
    });
    expect([...((raised[0]?.metadata['usernames_tried'] as string[]) ?? [])].sort()).toEqual([
      'spray-a',
      'spray-b',
      'spray-c',
      'spray-d',
    ]);
  });

  it('raises an alert when an administrator is created or a user is made administrator', async () => {
    await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: { username: 'new-boss', email: 'boss@example.test', password: 'long-enough-1', roles: ['admin'] },
    });
    const promoted = await t.createUser('promoted');
    await t.request('PATCH', `/api/v1/admin/users/${promoted.id}`, {
      token: admin,
      body: { roles: ['admin'] },
    });
    const created = await eventually(
      () => alerts('?type=new_admin_user'),
      (a) => a.length === 1,
    );
    expect(created[0]).toMatchObject({ severity: 'medium', affected_resources: ['user:new-boss'] });
    const granted = await eventually(
      () => alerts('?type=admin_role_granted'),
      (a) => a.length === 1,
    );
    expect(granted[0]?.affected_resources).toEqual(['user:promoted']);
  });

  it('raises an alert when a plugin with wildcard permissions is installed', async () => {
    // What the plugin manager announces on install (decisions §4, plugin.installed).
    t.platform.context.events.announce('plugin.installed', 'system', {
      plugin_id: 'greedy',
      version: '1.0.0',
      permissions: ['events:emit', 'auth:*'],
    });
    t.platform.context.events.announce('plugin.installed', 'system', {
      plugin_id: 'modest',
      version: '1.0.0',
      permissions: ['events:emit'],
    });
    const raised = await eventually(
      () => alerts('?type=plugin_wildcard_permissions'),
      (a) => a.length === 1,
    );
    expect(raised[0]).toMatchObject({
      severity: 'high',
      affected_resources: ['plugin:greedy'],
      metadata: { wildcard_permissions: ['auth:*'] },
    });
  });

  it('raises an alert when server errors pile up', async () => {
    // A table the status route reads goes missing: every call now fails with a 500.
    await t.platform.context.database.db.schema.dropTable('failed_logins').execute();
    for (let i = 0; i < 2; i++) {
      expect((await t.request('GET', '/api/v1/security/status', { token: admin })).statusCode).toBe(500);
    }
    const raised = await eventually(
      () => alerts('?type=server_errors'),
      (a) => a.length === 1,
    );
    expect(raised[0]).toMatchObject({ severity: 'medium', metadata: { server_errors: 2, last_status: 500 } });
  });

  it('filters by status and severity, and acknowledges then resolves an alert, audited', async () => {
    const [first] = await alerts('?type=brute_force_ip');
    const id = first?.id as string;
    const ack = await t.request('PATCH', `/api/v1/admin/security/alerts/${id}`, {
      token: admin,
      body: { status: 'acknowledged', note: 'looking' },
    });
    expect(ack.statusCode).toBe(200);
    expect(ack.data.data.alert).toMatchObject({
      status: 'acknowledged',
      acknowledged_by: 'admin',
      note: 'looking',
    });
    expect((await alerts('?status=acknowledged')).map((a) => a.id)).toEqual([id]);
    expect((await alerts('?status=open')).map((a) => a.id)).not.toContain(id);
    expect((await alerts('?status=unresolved')).map((a) => a.id)).toContain(id);
    expect((await alerts('?severity=medium')).every((a) => a.severity === 'medium')).toBe(true);

    const resolved = await t.request('PATCH', `/api/v1/admin/security/alerts/${id}`, {
      token: admin,
      body: { status: 'resolved', note: 'blocked the range' },
    });
    expect(resolved.data.data.alert).toMatchObject({ status: 'resolved', resolved_by: 'admin' });
    const again = await t.request('PATCH', `/api/v1/admin/security/alerts/${id}`, {
      token: admin,
      body: { status: 'acknowledged' },
    });
    expect(again.statusCode).toBe(409);
    expect(again.data.error.code).toBe('RESOURCE_CONFLICT');
    const audit = await t.request('GET', `/api/v1/admin/audit-log?resource_id=${id}`, { token: admin });
    expect(audit.data.data.audit_entries.map((e: { action: string }) => e.action)).toEqual([
      'security.alert.resolve',
      'security.alert.acknowledge',
    ]);
    const one = await t.request('GET', `/api/v1/admin/security/alerts/${id}`, { token: admin });
    expect(one.data.data.alert.status).toBe('resolved');
    expect(
      (await t.request('GET', '/api/v1/admin/security/alerts/alr_missing', { token: admin })).statusCode,
    ).toBe(404);
    const bad = await t.request('PATCH', `/api/v1/admin/security/alerts/${id}`, {
      token: admin,
      body: { status: 'open' },
    });
    expect(bad.statusCode).toBe(422);
  });
});
