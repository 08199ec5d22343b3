import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('user administration', () => {
  let t: TestPlatform;
  let admin: string;
  const announced: PlatformEventMap['platform.event'][] = [];
  beforeAll(async () => {
    t = await startPlatform({ auth: { max_failed_logins: 3 } });
    admin = await t.adminToken();
    t.platform.context.events.on('platform.event', (e) => announced.push(e));
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);
  afterEach(() => {
    vi.useRealTimers();
  });

  const create = (body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/admin/users', { token: admin, body });
  const adminKey = async () =>
    (await t.request('POST', '/api/v1/auth/api-keys', { token: admin, body: { name: 'time-travel' } })).data
      .data.key as string;
  const auditCount = async (action: string, resourceId: string) =>
    (
      await t.request('GET', `/api/v1/admin/audit-log?action=${action}&resource_id=${resourceId}`, {
        token: admin,
      })
    ).data.data.pagination.total as number;

  it('creates an active, unverified user and answers 201 without any password material', async () => {
    const res = await create({
      username: 'jdoe',
      email: 'JDoe@Example.com',
      password: 'a long passphrase',
      full_name: 'Jane Doe',
      roles: ['user', 'moderator'],
      force_password_change: true,
    });
    expect(res.statusCode).toBe(201);
    expect(res.data.data.user).toMatchObject({
      username: 'jdoe',
      email: 'jdoe@example.com',
      full_name: 'Jane Doe',
      roles: ['user', 'moderator'],
      status: 'active',
      email_verified: false,
      login_count: 0,
      last_login: null,
      metadata: { password_change_required: true, failed_login_attempts: 0 },
      sessions: [],
      api_keys: [],
    });
    expect(res.data.data.user.id).toMatch(/^usr_/);
    expect(res.data.data.email_delivery).toBe('not_requested');
    expect(res.body).not.toMatch(/argon2|password_hash|a long passphrase/);
    expect(await auditCount('user.create', res.data.data.user.id)).toBe(1);
    expect(announced.find((e) => e.type === 'user.created' && e.data['username'] === 'jdoe')).toMatchObject({
      source: 'system',
      actor: { username: 'admin' },
    });
    const login = await t.login('jdoe', 'a long passphrase');
    expect(login.access).toBeTruthy();
  });

  it('refuses a taken username or e-mail with 409 RESOURCE_CONFLICT', async () => {
    await create({ username: 'taken', email: 'taken@example.test', password: 'long-enough-1' });
    const sameName = await create({
      username: 'taken',
      email: 'other@example.test',
      password: 'long-enough-1',
    });
    expect(sameName.statusCode).toBe(409);
    expect(sameName.data.error).toMatchObject({ code: 'RESOURCE_CONFLICT', details: { field: 'username' } });
    const sameMail = await create({
      username: 'taken2',
      email: 'TAKEN@example.test',
      password: 'long-enough-1',
    });
    expect(sameMail.statusCode).toBe(409);
    expect(sameMail.data.error.details.field).toBe('email');
  });

  it('treats usernames differing only in case as one name, for creation and login', async () => {
    const alice = await create({
      username: 'CaseAlice',
      email: 'case-alice@example.test',
      password: 'long-enough-1',
    });
    expect(alice.statusCode).toBe(201);
    const twin = await create({
      username: 'casealice',
      email: 'case-twin@example.test',
      password: 'long-enough-1',
    });
    expect(twin.statusCode).toBe(409);
    expect(twin.data.error.details.field).toBe('username');
    // Two at once: the database refuses the second too.
    const racing = await Promise.all(
      ['CASEBOB', 'casebob', 'CaseBob'].map((username, i) =>
        create({ username, email: `case-bob-${i}@example.test`, password: 'long-enough-1' }),
      ),
    );
    expect(racing.map((r) => r.statusCode).sort()).toEqual([201, 409, 409]);
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'casealice', password: 'long-enough-1' },
    });
    expect(login.statusCode).toBe(200);
    expect(login.data.data.user.username).toBe('CaseAlice');
  });

  it('validates username, e-mail, password length, roles and unknown fields with 422', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ username: 'ab', email: 'a@example.test', password: 'long-enough-1' }, 'username'],
      [{ username: 'bad name', email: 'a@example.test', password: 'long-enough-1' }, 'username'],
      [{ username: 'okname', email: 'not-an-email', password: 'long-enough-1' }, 'email'],
      [{ username: 'okname', email: 'a@example.test', password: 'short' }, 'password'],
      [
        { username: 'okname', email: 'a@example.test', password: 'long-enough-1', roles: ['root'] },
        'roles.0',
      ],
      [{ username: 'okname', email: 'a@example.test', password: 'long-enough-1', extra: 1 }, 'extra'],
      [{ email: 'a@example.test', password: 'long-enough-1' }, 'username'],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
      expect(res.data.error.details.field).toBe(field);
    }
  });

  it('searches names in any alphabet whatever their case', async () => {
    await create({
      username: 'unicode-search',
      email: 'unicode-search@unicode.test',
      password: 'long-enough-1',
      full_name: 'Ünïcødé Ærøskøbing',
    });
    const found = async (search: string) =>
      (
        await t.request('GET', `/api/v1/admin/users?search=${encodeURIComponent(search)}`, { token: admin })
      ).data.data.users.map((u: { username: string }) => u.username);
    for (const search of ['Ünïcødé', 'ünïcødé', 'ÆRØSKØBING', 'ærøsk']) {
      expect(await found(search), search).toEqual(['unicode-search']);
    }
  });

  it('lists users with search, role and status filters, sorting and pagination', async () => {
    for (const [name, full, roles] of [
      ['alpha-list', 'Ann Alpha', ['user']],
      ['beta-list', 'Bob Beta', ['moderator']],
      ['gamma-list', 'Gil Gamma', ['user']],
    ] as const) {
      await create({
        username: name,
        email: `${name}@list.test`,
        password: 'long-enough-1',
        full_name: full,
        roles,
      });
    }
    const list = (q: string) => t.request('GET', `/api/v1/admin/users?${q}`, { token: admin });

    const search = await list('search=list.test&sort=username&order=asc');
    expect(search.statusCode).toBe(200);
    expect(search.data.data.users.map((u: { username: string }) => u.username)).toEqual([
      'alpha-list',
      'beta-list',
      'gamma-list',
    ]);
    expect(search.data.data.users[0]).not.toHaveProperty('password_hash');
    expect(
      (await list('search=BOB%20BE')).data.data.users.map((u: { username: string }) => u.username),
    ).toEqual(['beta-list']);
    const mods = await list('role=moderator&search=list');
    expect(mods.data.data.users.map((u: { username: string }) => u.username)).toEqual(['beta-list']);
    const desc = await list('search=list.test&sort=email&order=desc&per_page=2&page=1');
    expect(desc.data.data.users.map((u: { username: string }) => u.username)).toEqual([
      'gamma-list',
      'beta-list',
    ]);
    expect(desc.data.data.pagination).toEqual({
      page: 1,
      per_page: 2,
      total: 3,
      pages: 2,
      has_next: true,
      has_prev: false,
    });
    const page2 = await list('search=list.test&sort=email&order=desc&per_page=2&page=2');
    expect(page2.data.data.users.map((u: { username: string }) => u.username)).toEqual(['alpha-list']);
    expect(page2.data.data.pagination).toMatchObject({ has_next: false, has_prev: true });
    expect((await list('status=suspended&search=list.test')).data.data.users).toEqual([]);
    const future = new Date(Date.now() + 86_400_000).toISOString();
    expect((await list(`created_after=${future}`)).data.data.pagination.total).toBe(0);
    expect((await list('created_after=2000-01-01&search=list.test')).data.data.pagination.total).toBe(3);
    const byLogin = await list('sort=last_login&order=desc&per_page=1');
    expect(byLogin.data.data.users[0].username).not.toBe('alpha-list');
  });

  it('answers 422 for per_page over 100 and for unknown sort fields', async () => {
    const over = await t.request('GET', '/api/v1/admin/users?per_page=101', { token: admin });
    expect(over.statusCode).toBe(422);
    expect(over.data.error.details.field).toBe('per_page');
    expect((await t.request('GET', '/api/v1/admin/users?sort=password', { token: admin })).statusCode).toBe(
      422,
    );
  });

  it('shows every detail field, with sessions and masked API keys, and failed login attempts', async () => {
    const u = await t.createUser('detailed', ['moderator']);
    const key = await t.request('POST', '/api/v1/auth/api-keys', {
      token: u.access,
      body: { name: 'ci', scopes: ['read:users'] },
    });
    const fullKey = key.data.data.key as string;
    for (let i = 0; i < 2; i++) {
      await t.request('POST', '/api/v1/auth/login', {
        body: { username: 'detailed', password: 'wrong-pass-1' },
      });
    }
    const res = await t.request('GET', `/api/v1/admin/users/${u.id}`, { token: admin });
    expect(res.statusCode).toBe(200);
    const user = res.data.data.user;
    expect(user).toMatchObject({
      id: u.id,
      username: 'detailed',
      roles: ['moderator'],
      status: 'active',
      login_count: 1,
      profile: { avatar_url: '', bio: '', location: '' },
      preferences: { language: 'en', notifications: true },
      metadata: { failed_login_attempts: 2, login_count: 1, locked_until: null },
    });
    expect(user.permissions).toEqual(expect.arrayContaining(['read:users', 'read:metrics', 'events:emit']));
    expect(user.permissions.every((p: string) => /^[a-z]+:[a-z]+$/.test(p))).toBe(true);
    expect(user.metadata.last_password_change).toBeTruthy();
    expect(user.sessions).toHaveLength(1);
    expect(user.sessions[0]).toMatchObject({ ip_address: '127.0.0.1', location: 'unknown', is_active: true });
    expect(Object.keys(user.sessions[0]).sort()).toEqual(
      ['device', 'id', 'ip_address', 'is_active', 'last_activity', 'location'].sort(),
    );
    expect(user.api_keys).toEqual([
      {
        id: key.data.data.api_key.id,
        name: 'ci',
        key_preview: `plat_…${fullKey.slice(-4)}`,
        last_used: null,
        is_active: true,
      },
    ]);
    expect(res.body).not.toContain(fullKey);
    expect(res.body).not.toMatch(/argon2|password_hash|key_hash/);

    await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'detailed', password: 'wrong-pass-1' },
    });
    const locked = await t.request('GET', `/api/v1/admin/users/${u.id}`, { token: admin });
    expect(locked.data.data.user.metadata.failed_login_attempts).toBe(3);
    expect(locked.data.data.user.metadata.locked_until).not.toBeNull();
  });

  it('answers 404 RESOURCE_NOT_FOUND for an unknown user', async () => {
    const res = await t.request('GET', '/api/v1/admin/users/usr_nope', { token: admin });
    expect(res.statusCode).toBe(404);
    expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
  });

  it('updates fields, roles and status with PUT and PATCH, and deactivation ends the sessions at once', async () => {
    const u = await t.createUser('updatable');
    const put = await t.request('PUT', `/api/v1/admin/users/${u.id}`, {
      token: admin,
      body: { full_name: 'Up Datable', email: 'new@example.test', roles: ['user', 'moderator'] },
    });
    expect(put.statusCode).toBe(200);
    expect(put.data.data.user).toMatchObject({
      full_name: 'Up Datable',
      email: 'new@example.test',
      email_verified: false,
      roles: ['user', 'moderator'],
    });
    expect(
      announced.find((e) => e.type === 'user.updated' && e.data['user_id'] === u.id)?.data,
    ).toMatchObject({
      changed_fields: ['email', 'full_name', 'roles'],
    });
    // The new role applies to the live token at once.
    expect((await t.request('GET', '/api/v1/users', { token: u.access })).statusCode).toBe(200);

    const patch = await t.request('PATCH', `/api/v1/admin/users/${u.id}`, {
      token: admin,
      body: { profile: { bio: 'Hello' }, preferences: { theme: 'dark' } },
    });
    expect(patch.data.data.user).toMatchObject({
      full_name: 'Up Datable',
      profile: { bio: 'Hello', avatar_url: '' },
      preferences: { theme: 'dark', language: 'en' },
    });

    const off = await t.request('PATCH', `/api/v1/admin/users/${u.id}`, {
      token: admin,
      body: { status: 'inactive' },
    });
    expect(off.data.data.user.status).toBe('inactive');
    expect((await t.request('GET', '/api/v1/auth/me', { token: u.access })).statusCode).toBe(401);
    expect(await auditCount('user.update', u.id)).toBe(3);

    const suspendedByPut = await t.request('PUT', `/api/v1/admin/users/${u.id}`, {
      token: admin,
      body: { status: 'suspended' },
    });
    expect(suspendedByPut.statusCode).toBe(422);
    expect(
      (await t.request('PUT', `/api/v1/admin/users/${u.id}`, { token: admin, body: {} })).statusCode,
    ).toBe(422);
  });

  it('suspends a user: sessions and API keys stop at once, audited as user.suspend and announced', async () => {
    const u = await t.createUser('to-suspend');
    const key = (await t.request('POST', '/api/v1/auth/api-keys', { token: u.access, body: { name: 'k' } }))
      .data.data.key as string;
    expect((await t.request('GET', '/api/v1/auth/me', { apiKey: key })).statusCode).toBe(200);

    const res = await t.request('POST', `/api/v1/admin/users/${u.id}/suspend`, {
      token: admin,
      body: { reason: 'Terms violation', duration_days: 7, notify_user: false },
    });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.user.status).toBe('suspended');
    expect(res.data.data.user.metadata.suspension_reason).toBe('Terms violation');
    const until = Date.parse(res.data.data.user.metadata.suspended_until);
    expect(until - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    expect(res.data.data.user.sessions.every((s: { is_active: boolean }) => !s.is_active)).toBe(true);

    const me = await t.request('GET', '/api/v1/auth/me', { token: u.access });
    expect(me.statusCode).toBe(401);
    const byKey = await t.request('GET', '/api/v1/auth/me', { apiKey: key });
    expect(byKey.statusCode).toBe(401);
    expect(byKey.data.error.details.reason).toBe('account_suspended');
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'to-suspend', password: 'user-password-1' },
    });
    expect(login.data.error.details.reason).toBe('account_suspended');

    const audit = await t.request('GET', `/api/v1/admin/audit-log?action=user.suspend&resource_id=${u.id}`, {
      token: admin,
    });
    expect(audit.data.data.audit_entries).toHaveLength(1);
    expect(audit.data.data.audit_entries[0]).toMatchObject({
      admin_user: 'admin',
      action: 'user.suspend',
      resource_type: 'user',
      details: { reason: 'Terms violation', duration_days: 7 },
    });
    expect(announced.find((e) => e.type === 'user.suspended' && e.data['user_id'] === u.id)).toBeTruthy();
  });

  it('ends a suspension by itself after duration_days, in the list, the detail and at login', async () => {
    const u = await t.createUser('briefly-suspended');
    await t.request('POST', `/api/v1/admin/users/${u.id}/suspend`, {
      token: admin,
      body: { reason: 'cool-off', duration_days: 1 },
    });
    // Access tokens expire over the jump in time below; an API key does not.
    const apiKey = await adminKey();
    const listed = async () =>
      (await t.request('GET', '/api/v1/admin/users?search=briefly', { apiKey })).data.data.users[0].status;
    expect(await listed()).toBe('suspended');

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 86_400_000 + 60_000);
    expect(await listed()).toBe('active');
    const detail = await t.request('GET', `/api/v1/admin/users/${u.id}`, { apiKey });
    expect(detail.data.data.user).toMatchObject({
      status: 'active',
      metadata: { suspended_until: null, suspension_reason: null },
    });
    expect((await t.login('briefly-suspended', 'user-password-1')).access).toBeTruthy();
  });

  it('keeps an indefinite suspension until an admin sets the user active again', async () => {
    const u = await t.createUser('long-suspended');
    await t.request('POST', `/api/v1/admin/users/${u.id}/suspend`, {
      token: admin,
      body: { reason: 'abuse' },
    });
    const apiKey = await adminKey();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 400 * 86_400_000);
    const detail = await t.request('GET', `/api/v1/admin/users/${u.id}`, { apiKey });
    expect(detail.data.data.user.status).toBe('suspended');
    expect(detail.data.data.user.metadata.suspended_until).toBeNull();
    vi.useRealTimers();
    const lifted = await t.request('PATCH', `/api/v1/admin/users/${u.id}`, {
      token: admin,
      body: { status: 'active' },
    });
    expect(lifted.data.data.user).toMatchObject({ status: 'active', metadata: { suspension_reason: null } });
    expect((await t.login('long-suspended', 'user-password-1')).access).toBeTruthy();
  });

  it('resets a password: sessions end, the temporary password works, and a change is required', async () => {
    const u = await t.createUser('forgetful');
    const res = await t.request('POST', `/api/v1/admin/users/${u.id}/reset-password`, {
      token: admin,
      body: { temporary_password: 'Temporary-Pass-1', force_change_on_login: true, send_email: false },
    });
    expect(res.statusCode).toBe(200);
    expect(res.data.data).not.toHaveProperty('temporary_password');
    expect(res.data.data.user.metadata.password_change_required).toBe(true);
    expect((await t.request('GET', '/api/v1/auth/me', { token: u.access })).statusCode).toBe(401);
    const old = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'forgetful', password: 'user-password-1' },
    });
    expect(old.statusCode).toBe(401);
    const fresh = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'forgetful', password: 'Temporary-Pass-1' },
    });
    expect(fresh.statusCode).toBe(200);
    expect(fresh.data.data.password_change_required).toBe(true);
    expect(await auditCount('user.reset_password', u.id)).toBe(1);

    const short = await t.request('POST', `/api/v1/admin/users/${u.id}/reset-password`, {
      token: admin,
      body: { temporary_password: 'short' },
    });
    expect(short.statusCode).toBe(422);
    expect(short.data.error.details.field).toBe('temporary_password');
  });

  it('generates a temporary password when none is given and shows it once', async () => {
    const u = await t.createUser('generated-reset');
    const res = await t.request('POST', `/api/v1/admin/users/${u.id}/reset-password`, {
      token: admin,
      body: {},
    });
    expect(res.statusCode).toBe(200);
    const generated = res.data.data.temporary_password as string;
    expect(generated.length).toBeGreaterThanOrEqual(16);
    expect((await t.login('generated-reset', generated)).access).toBeTruthy();
    const audit = await t.request(
      'GET',
      `/api/v1/admin/audit-log?resource_id=${u.id}&action=user.reset_password`,
      {
        token: admin,
      },
    );
    expect(audit.body).not.toContain(generated);
  });

  it('deletes a user, whose token stops at once; refuses deleting yourself and the last admin', async () => {
    const u = await t.createUser('leaving');
    const del = await t.request('DELETE', `/api/v1/admin/users/${u.id}`, { token: admin });
    expect(del.statusCode).toBe(200);
    expect(del.data.success).toBe(true);
    expect((await t.request('GET', `/api/v1/admin/users/${u.id}`, { token: admin })).statusCode).toBe(404);
    expect((await t.request('GET', '/api/v1/auth/me', { token: u.access })).statusCode).toBe(401);
    expect((await t.request('DELETE', `/api/v1/admin/users/${u.id}`, { token: admin })).statusCode).toBe(404);
    expect(announced.find((e) => e.type === 'user.deleted' && e.data['user_id'] === u.id)).toBeTruthy();

    const me = (await t.request('GET', '/api/v1/auth/me', { token: admin })).data.data.id as string;
    const self = await t.request('DELETE', `/api/v1/admin/users/${me}`, { token: admin });
    expect(self.statusCode).toBe(409);
    expect(self.data.error.code).toBe('RESOURCE_CONFLICT');
    const demote = await t.request('PATCH', `/api/v1/admin/users/${me}`, {
      token: admin,
      body: { roles: ['user'] },
    });
    expect(demote.statusCode).toBe(409);
    expect(demote.data.error.details.reason).toBe('last_active_admin');
  });

  it('refuses non-admins with ADMIN_REQUIRED and narrowed admin keys with INSUFFICIENT_ADMIN_PERMISSIONS', async () => {
    const u = await t.createUser('not-user-admin', ['moderator']);
    const res = await t.request('GET', '/api/v1/admin/users', { token: u.access });
    expect(res.statusCode).toBe(403);
    expect(res.data.error.code).toBe('ADMIN_REQUIRED');
    const key = await t.request('POST', '/api/v1/auth/api-keys', {
      token: admin,
      body: { name: 'narrow', scopes: ['admin:system'] },
    });
    const narrowed = await t.request('GET', '/api/v1/admin/users', { apiKey: key.data.data.key });
    expect(narrowed.statusCode).toBe(403);
    expect(narrowed.data.error.code).toBe('INSUFFICIENT_ADMIN_PERMISSIONS');
  });

  it('lets an admin key narrowed to write:users manage users but not make anyone an administrator', async () => {
    const key = (
      await t.request('POST', '/api/v1/auth/api-keys', {
        token: admin,
        body: { name: 'users-only', scopes: ['write:users'] },
      })
    ).data.data.key as string;
    const body = (username: string, roles: string[]) => ({
      username,
      email: `${username}@example.com`,
      password: 'a long passphrase',
      roles,
    });
    const made = await t.request('POST', '/api/v1/users', { apiKey: key, body: body('keymade', ['user']) });
    expect(made.statusCode).toBe(201);
    const asAdmin = await t.request('POST', '/api/v1/users', {
      apiKey: key,
      body: body('keyadmin', ['admin']),
    });
    expect(asAdmin.statusCode).toBe(403);
    expect(asAdmin.data.error.code).toBe('INSUFFICIENT_ADMIN_PERMISSIONS');
    expect(asAdmin.data.error.details.required_permission).toBe('admin:users');
    for (const method of ['PATCH', 'PUT'] as const) {
      const promote = await t.request(method, `/api/v1/users/${made.data.data.user.id}`, {
        apiKey: key,
        body: { roles: ['user', 'admin'] },
      });
      expect(promote.statusCode).toBe(403);
      expect(promote.data.error.code).toBe('INSUFFICIENT_ADMIN_PERMISSIONS');
    }
    const users = await t.request('GET', '/api/v1/admin/users?search=key', { token: admin });
    expect(
      users.data.data.users.map((u: { username: string; roles: string[] }) => [u.username, u.roles]),
    ).toEqual([['keymade', ['user']]]);
  });
  it('does not let an admin key narrowed to write:users demote, deactivate or delete an administrator', async () => {
    const other = await t.createUser('other-admin', ['admin']);
    const plain = await t.createUser('plain-for-key');
    const key = (
      await t.request('POST', '/api/v1/auth/api-keys', {
        token: admin,
        body: { name: 'users-only-2', scopes: ['write:users'] },
      })
    ).data.data.key as string;
    for (const body of [{ roles: ['user'] }, { status: 'inactive' }]) {
      const res = await t.request('PATCH', `/api/v1/users/${other.id}`, { apiKey: key, body });
      expect(res.statusCode).toBe(403);
      expect(res.data.error).toMatchObject({
        code: 'INSUFFICIENT_ADMIN_PERMISSIONS',
        details: { required_permission: 'admin:users' },
      });
    }
    const deleted = await t.request('DELETE', `/api/v1/users/${other.id}`, { apiKey: key });
    expect(deleted.statusCode).toBe(403);
    expect(deleted.data.error.code).toBe('INSUFFICIENT_ADMIN_PERMISSIONS');
    // The administrator is untouched and still signed in.
    const me = await t.request('GET', '/api/v1/auth/me', { token: other.access });
    expect(me.statusCode).toBe(200);
    expect(me.data.data).toMatchObject({ roles: ['admin'], status: 'active' });
    // Other users the key still manages; an administrator's other fields it may not edit either.
    const renamed = await t.request('PATCH', `/api/v1/users/${other.id}`, {
      apiKey: key,
      body: { full_name: 'Other Admin' },
    });
    expect(renamed.statusCode).toBe(403);
    expect(
      (await t.request('PATCH', `/api/v1/users/${plain.id}`, { apiKey: key, body: { status: 'inactive' } }))
        .statusCode,
    ).toBe(200);
    expect((await t.request('DELETE', `/api/v1/users/${plain.id}`, { apiKey: key })).statusCode).toBe(200);
    // With admin:users (the admin's own token) the same changes are allowed.
    expect(
      (
        await t.request('PATCH', `/api/v1/admin/users/${other.id}`, {
          token: admin,
          body: { roles: ['user'] },
        })
      ).statusCode,
    ).toBe(200);
  });
});
