import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('roles, permissions and the 403 answers', () => {
  let t: TestPlatform;
  let admin: string;
  let user: { id: string; access: string };
  let moderator: { id: string; access: string };
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    user = await t.createUser('plain-user', ['user']);
    moderator = await t.createUser('a-moderator', ['moderator']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('grants each role the permissions of decisions §2', async () => {
    const of = async (username: string, password: string) =>
      (await t.request('POST', '/api/v1/auth/login', { body: { username, password } })).data.data.user
        .permissions;
    expect(await of('plain-user', 'user-password-1')).toEqual([
      'events:emit',
      'events:subscribe',
      'read:plugins',
      'read:system',
    ]);
    expect(await of('a-moderator', 'user-password-1')).toEqual([
      'events:emit',
      'events:subscribe',
      'read:metrics',
      'read:plugins',
      'read:system',
      'read:users',
    ]);
    expect(await of('admin', 'admin-password-1')).toEqual(['*']);
  });

  it('lets a user with read:system read the status', async () => {
    expect((await t.request('GET', '/api/v1/status', { token: user.access })).statusCode).toBe(200);
  });

  it('refuses a key without read:system on the status with AUTHORIZATION_DENIED', async () => {
    const key = (
      await t.request('POST', '/api/v1/auth/api-keys', {
        token: user.access,
        body: { name: 'emit-only', scopes: ['events:emit'] },
      })
    ).data.data.key;
    const res = await t.request('GET', '/api/v1/status', { apiKey: key });
    expect(res.statusCode).toBe(403);
    expect(res.data.error).toMatchObject({
      code: 'AUTHORIZATION_DENIED',
      details: { required_permission: 'read:system' },
    });
  });

  it('refuses a user without admin:config on GET /config with AUTHORIZATION_DENIED and lets an admin read it', async () => {
    const refused = await t.request('GET', '/api/v1/config', { token: user.access });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error.code).toBe('AUTHORIZATION_DENIED');
    const moderatorRefused = await t.request('GET', '/api/v1/config', { token: moderator.access });
    expect(moderatorRefused.data.error.code).toBe('AUTHORIZATION_DENIED');
    expect((await t.request('GET', '/api/v1/config', { token: admin })).statusCode).toBe(200);
  });

  it('refuses users and moderators on admin routes with ADMIN_REQUIRED and lets an admin in', async () => {
    for (const token of [user.access, moderator.access]) {
      const res = await t.request('GET', '/api/v1/admin/config', { token });
      expect(res.statusCode).toBe(403);
      expect(res.data.error.code).toBe('ADMIN_REQUIRED');
    }
    expect((await t.request('GET', '/api/v1/admin/config', { token: admin })).statusCode).toBe(200);
  });

  it('refuses a missing events permission with INSUFFICIENT_EVENT_PERMISSIONS and lets a holder emit', async () => {
    const key = (
      await t.request('POST', '/api/v1/auth/api-keys', {
        token: user.access,
        body: { name: 'no-events', scopes: ['read:system'] },
      })
    ).data.data.key;
    const emit = await t.request('POST', '/api/v1/events', {
      apiKey: key,
      body: { event_type: 'order.created', data: {} },
    });
    expect(emit.statusCode).toBe(403);
    expect(emit.data.error).toMatchObject({
      code: 'INSUFFICIENT_EVENT_PERMISSIONS',
      details: { required_permission: 'events:emit' },
    });
    const read = await t.request('GET', '/api/v1/events', { apiKey: key });
    expect(read.data.error.code).toBe('INSUFFICIENT_EVENT_PERMISSIONS');
    const allowed = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'order.created', data: {} },
    });
    expect(allowed.statusCode).toBe(201);
  });

  it('keeps event replay, purge and audit to admins', async () => {
    const refused = await t.request('GET', '/api/v1/events/evt_none/audit', { token: moderator.access });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error.code).toBe('ADMIN_REQUIRED');
    const asAdmin = await t.request('GET', '/api/v1/events/evt_none/audit', { token: admin });
    expect(asAdmin.statusCode).not.toBe(403);
  });

  it('refuses event replay, purge and audit to an admin key narrowed without admin:system', async () => {
    const keyWith = async (scopes: string[]) =>
      (await t.request('POST', '/api/v1/auth/api-keys', { token: admin, body: { name: 'narrow', scopes } }))
        .data.data.key as string;
    const narrow = await keyWith(['read:system']);
    const emitted = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'narrow.kept', data: {} },
    });
    const eventId = emitted.data.data.event.event_id as string;
    const purgeBody = { criteria: { older_than_days: 0, event_types: ['narrow.*'] }, batch_size: 10 };
    const attempts = [
      await t.request('POST', '/api/v1/events/purge', { apiKey: narrow, body: purgeBody }),
      await t.request('GET', '/api/v1/events/purge/prg_none', { apiKey: narrow }),
      await t.request('POST', '/api/v1/events/replay', {
        apiKey: narrow,
        body: { event_filter: { event_types: ['narrow.*'] } },
      }),
      await t.request('GET', '/api/v1/events/replay/rpl_none', { apiKey: narrow }),
      await t.request('GET', `/api/v1/events/${eventId}/audit`, { apiKey: narrow }),
    ];
    for (const res of attempts) {
      expect(res.statusCode, res.body).toBe(403);
      expect(res.data.error).toMatchObject({
        code: 'INSUFFICIENT_ADMIN_PERMISSIONS',
        details: { required_permission: 'admin:system' },
      });
    }
    expect((await t.request('GET', `/api/v1/events/${eventId}`, { token: admin })).statusCode).toBe(200);

    const scoped = await keyWith(['admin:system']);
    const audit = await t.request('GET', `/api/v1/events/${eventId}/audit`, { apiKey: scoped });
    expect(audit.statusCode, audit.body).toBe(200);
    const dryRun = await t.request('POST', '/api/v1/events/purge', {
      apiKey: scoped,
      body: { ...purgeBody, dry_run: true },
    });
    expect(dryRun.statusCode, dryRun.body).toBe(202);
  });

  it('answers admin routes without credentials with 401, not 403', async () => {
    const res = await t.request('GET', '/api/v1/admin/config');
    expect(res.statusCode).toBe(401);
  });

  it('takes a role change into account at once', async () => {
    const promoted = await t.createUser('promoted-user', ['user']);
    expect((await t.request('GET', '/api/v1/admin/config', { token: promoted.access })).statusCode).toBe(403);
    await t.platform.context.users.update(promoted.id, { roles: JSON.stringify(['admin']) });
    await t.platform.context.auth.userChanged(promoted.id);
    expect((await t.request('GET', '/api/v1/admin/config', { token: promoted.access })).statusCode).toBe(200);
  });
});
