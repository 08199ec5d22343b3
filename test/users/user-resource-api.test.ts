import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('users resource API', () => {
  let t: TestPlatform;
  let admin: string;
  let plain: { id: string; access: string };
  let moderator: { id: string; access: string };
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    plain = await t.createUser('plain-resource');
    moderator = await t.createUser('moderator-resource', ['moderator']);
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('lets read:users holders list users and refuses others with AUTHORIZATION_DENIED', async () => {
    const listed = await t.request('GET', '/api/v1/users?search=resource&sort=username&order=asc', {
      token: moderator.access,
    });
    expect(listed.statusCode).toBe(200);
    expect(listed.data.data.users.map((u: { username: string }) => u.username)).toEqual([
      'moderator-resource',
      'plain-resource',
    ]);
    expect(listed.data.data.pagination.total).toBe(2);
    const refused = await t.request('GET', '/api/v1/users', { token: plain.access });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error).toMatchObject({
      code: 'AUTHORIZATION_DENIED',
      details: { required_permission: 'read:users' },
    });
  });

  it('lets a user read and update themselves, sessions and keys included', async () => {
    const me = await t.request('GET', `/api/v1/users/${plain.id}`, { token: plain.access });
    expect(me.statusCode).toBe(200);
    expect(me.data.data.user).toMatchObject({ id: plain.id, username: 'plain-resource' });
    expect(me.data.data.user.sessions.length).toBeGreaterThan(0);
    expect(me.data.data.user.api_keys).toEqual([]);
    const updated = await t.request('PATCH', `/api/v1/users/${plain.id}`, {
      token: plain.access,
      body: {
        full_name: 'Plain Person',
        profile: { location: 'Lisbon' },
        preferences: { notifications: false },
      },
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.data.data.user).toMatchObject({
      full_name: 'Plain Person',
      profile: { location: 'Lisbon' },
      preferences: { notifications: false },
    });
    const put = await t.request('PUT', `/api/v1/users/${plain.id}`, {
      token: plain.access,
      body: { full_name: 'Plain P.' },
    });
    expect(put.data.data.user.full_name).toBe('Plain P.');
    const audit = await t.request(
      'GET',
      `/api/v1/admin/audit-log?resource_id=${plain.id}&action=user.update`,
      {
        token: admin,
      },
    );
    expect(audit.data.data.audit_entries[0]).toMatchObject({
      admin_user: 'plain-resource',
      details: { self_service: true },
    });
  });

  it('refuses a user changing their own roles or status', async () => {
    for (const body of [{ roles: ['admin'] }, { status: 'inactive' }, { email_verified: true }]) {
      const res = await t.request('PATCH', `/api/v1/users/${plain.id}`, { token: plain.access, body });
      expect(res.statusCode).toBe(403);
      expect(res.data.error.code).toBe('AUTHORIZATION_DENIED');
    }
    const me = await t.request('GET', `/api/v1/users/${plain.id}`, { token: plain.access });
    expect(me.data.data.user.roles).toEqual(['user']);
  });

  it('lets read:users holders read others, without their sessions and keys', async () => {
    const other = await t.request('GET', `/api/v1/users/${plain.id}`, { token: moderator.access });
    expect(other.statusCode).toBe(200);
    expect(other.data.data.user.username).toBe('plain-resource');
    expect(other.data.data.user).not.toHaveProperty('sessions');
    expect(other.data.data.user).not.toHaveProperty('api_keys');
    const refused = await t.request('GET', `/api/v1/users/${moderator.id}`, { token: plain.access });
    expect(refused.statusCode).toBe(403);
    const edit = await t.request('PATCH', `/api/v1/users/${plain.id}`, {
      token: moderator.access,
      body: { full_name: 'Hijacked' },
    });
    expect(edit.statusCode).toBe(403);
    expect(edit.data.error.details.required_permission).toBe('write:users');
  });

  it('creates and deletes users with write:users, and lets admins manage roles', async () => {
    const created = await t.request('POST', '/api/v1/users', {
      token: admin,
      body: { username: 'resource-made', email: 'made@example.test', password: 'long-enough-1' },
    });
    expect(created.statusCode).toBe(201);
    expect(created.data.data.user).toMatchObject({
      roles: ['user'],
      status: 'active',
      email_verified: false,
    });
    const id = created.data.data.user.id as string;
    const promoted = await t.request('PUT', `/api/v1/users/${id}`, {
      token: admin,
      body: { roles: ['moderator'], status: 'inactive' },
    });
    expect(promoted.data.data.user).toMatchObject({ roles: ['moderator'], status: 'inactive' });
    expect((await t.request('POST', '/api/v1/users', { token: moderator.access, body: {} })).statusCode).toBe(
      403,
    );
    expect((await t.request('DELETE', `/api/v1/users/${id}`, { token: moderator.access })).statusCode).toBe(
      403,
    );
    const deleted = await t.request('DELETE', `/api/v1/users/${id}`, { token: admin });
    expect(deleted.statusCode).toBe(200);
    expect((await t.request('GET', `/api/v1/users/${id}`, { token: admin })).statusCode).toBe(404);
  });
});
