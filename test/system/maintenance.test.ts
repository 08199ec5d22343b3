import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilListening } from '../helpers/cluster-sync.js';
import { eventually } from '../helpers/eventually.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('maintenance mode', () => {
  let t: TestPlatform;
  let admin: string;
  let user: { access: string; refresh: string };
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    user = await t.createUser('maintenance-user');
  });
  afterAll(async () => {
    await t.close();
  });

  const setMaintenance = (body: Record<string, unknown>, token = admin) =>
    t.request('POST', '/api/v1/admin/system/maintenance', { token, body });

  it('refuses other requests with 423 SYSTEM_LOCKED carrying the message and the estimated end', async () => {
    const before = Date.now();
    const on = await setMaintenance({
      enabled: true,
      message: 'Upgrading the database',
      estimated_duration_minutes: 30,
    });
    expect(on.statusCode).toBe(200);
    expect(on.data.data).toMatchObject({
      enabled: true,
      message: 'Upgrading the database',
      allow_admin_access: true,
    });
    const end = Date.parse(on.data.data.estimated_end);
    expect(end).toBeGreaterThanOrEqual(before + 30 * 60_000);
    expect(end).toBeLessThan(Date.now() + 30 * 60_000 + 1000);

    for (const res of [
      await t.request('GET', '/api/v1/auth/me', { token: user.access }),
      await t.request('GET', '/api/v1/auth/sessions', { token: user.access }),
      await t.request('GET', '/api/v1/auth/me'),
    ]) {
      expect(res.statusCode).toBe(423);
      expect(res.data.success).toBe(false);
      expect(res.data.error).toMatchObject({
        code: 'SYSTEM_LOCKED',
        message: 'Upgrading the database',
        details: {
          message: 'Upgrading the database',
          estimated_end: on.data.data.estimated_end,
          estimated_duration_minutes: 30,
        },
      });
    }
    await setMaintenance({ enabled: false });
  });

  it('keeps health, ready, status, login, refresh and the API docs open', async () => {
    await setMaintenance({ enabled: true, allow_admin_access: false });
    expect((await t.request('GET', '/api/v1/health')).statusCode).toBe(200);
    expect((await t.request('GET', '/api/v1/ready')).statusCode).toBe(200);
    expect((await t.request('GET', '/api/v1/status', { token: user.access })).statusCode).toBe(200);
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'maintenance-user', password: 'user-password-1' },
    });
    expect(login.statusCode).toBe(200);
    const refresh = await t.request('POST', '/api/v1/auth/refresh', {
      body: { refresh_token: login.data.data.refresh_token },
    });
    expect(refresh.statusCode).toBe(200);
    expect((await t.request('GET', '/openapi.json')).statusCode).toBe(200);
    expect((await t.request('GET', '/docs/')).statusCode).toBe(200);
    expect((await t.request('GET', '/docs/json')).statusCode).toBe(200);
    expect((await t.request('GET', '/redoc')).statusCode).toBe(200);
    await setMaintenance({ enabled: false });
  });

  it('tells users the system is under maintenance when the message given is empty', async () => {
    const on = await setMaintenance({ enabled: true, message: '  ' });
    expect(on.data.data.message).toBe('The system is under maintenance');
    const refused = await t.request('GET', '/api/v1/auth/me', { token: user.access });
    expect(refused.statusCode).toBe(423);
    expect(refused.data.error.message).toBe('The system is under maintenance');
    await setMaintenance({ enabled: false });
  });

  it('lets admins through when allow_admin_access is true', async () => {
    await setMaintenance({ enabled: true, allow_admin_access: true });
    expect((await t.request('GET', '/api/v1/admin/config', { token: admin })).statusCode).toBe(200);
    expect((await t.request('GET', '/api/v1/auth/me', { token: admin })).statusCode).toBe(200);
    expect((await t.request('GET', '/api/v1/auth/me', { token: user.access })).statusCode).toBe(423);
    await setMaintenance({ enabled: false });
  });

  it('refuses admins when allow_admin_access is false, except on the maintenance switch itself', async () => {
    await setMaintenance({ enabled: true, allow_admin_access: false });
    const refused = await t.request('GET', '/api/v1/admin/config', { token: admin });
    expect(refused.statusCode).toBe(423);
    expect(refused.data.error.code).toBe('SYSTEM_LOCKED');
    const state = await t.request('GET', '/api/v1/admin/system/maintenance', { token: admin });
    expect(state.statusCode).toBe(200);
    expect(state.data.data).toMatchObject({ enabled: true, allow_admin_access: false });
    // A non-admin cannot use the switch even though it stays open.
    const byUser = await setMaintenance({ enabled: false }, user.access);
    expect(byUser.statusCode).toBe(423);
    const off = await setMaintenance({ enabled: false });
    expect(off.statusCode).toBe(200);
    expect(off.data.data.enabled).toBe(false);
    expect((await t.request('GET', '/api/v1/admin/config', { token: admin })).statusCode).toBe(200);
    expect((await t.request('GET', '/api/v1/auth/me', { token: user.access })).statusCode).toBe(200);
  });

  it('writes an audit entry and announces each change', async () => {
    const seen: string[] = [];
    const stop = t.platform.context.events.on('platform.event', (e) => seen.push(e.type));
    await setMaintenance({ enabled: true, message: 'audited' });
    await setMaintenance({ enabled: false });
    stop();
    expect(seen).toEqual(['system.maintenance.enabled', 'system.maintenance.disabled']);
    const entries = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', 'like', 'system.maintenance.%')
      .orderBy('id')
      .execute();
    const last = entries.slice(-2);
    expect(last.map((e) => e.action)).toEqual(['system.maintenance.enable', 'system.maintenance.disable']);
    expect(last[0]).toMatchObject({
      admin_user: 'admin',
      resource_type: 'system',
      resource_id: 'maintenance',
    });
    expect(JSON.parse(last[0]!.details)).toMatchObject({ enabled: true, message: 'audited' });
  });

  it('validates the switch body', async () => {
    const res = await setMaintenance({ enabled: 'yes please' });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details.field).toBe('enabled');
  });
});

// Starting a second instance (and, in cluster mode, its connections) takes a while on a busy machine.
const MULTI_INSTANCE_MS = 30_000;

describe('maintenance mode across instances', () => {
  let a: TestPlatform;
  let b: TestPlatform | undefined;
  beforeAll(async () => {
    a = await startPlatform();
  }, MULTI_INSTANCE_MS);
  afterAll(async () => {
    await b?.close();
    await a.close();
  });

  it(
    'is turned on through one instance and enforced by another',
    async () => {
      const admin = await a.adminToken();
      await a.createUser('cluster-user');
      // Cluster mode: B already runs and learns of the change through Redis. Embedded mode is one process by
      // design, so a second one started afterwards reads the stored state from the database.
      if (a.backend === 'cluster') {
        b = await startPlatform({}, { storage: a.storage });
        await untilListening(a, b);
      }
      const on = await a.request('POST', '/api/v1/admin/system/maintenance', {
        token: admin,
        body: { enabled: true, message: 'cluster-wide' },
      });
      expect(on.statusCode).toBe(200);
      b ??= await startPlatform({}, { storage: a.storage });
      const other = b;
      const userToken = (await other.login('cluster-user', 'user-password-1')).access;
      const refusedOnB = await eventually(
        async () => (await other.request('GET', '/api/v1/auth/me', { token: userToken })).statusCode === 423,
      );
      expect(refusedOnB).toBe(true);
      // Turned off again through the instance that knows it live (in embedded mode only the one process does).
      const switcher = a.backend === 'cluster' ? other : a;
      const off = await switcher.request('POST', '/api/v1/admin/system/maintenance', {
        token: (await switcher.login('admin', ADMIN_PASSWORD)).access,
        body: { enabled: false },
      });
      expect(off.statusCode).toBe(200);
      const userOnA = (await a.login('cluster-user', 'user-password-1')).access;
      const openOnA = await eventually(
        async () => (await a.request('GET', '/api/v1/auth/me', { token: userOnA })).statusCode === 200,
      );
      expect(openOnA).toBe(true);
    },
    MULTI_INSTANCE_MS,
  );
});
