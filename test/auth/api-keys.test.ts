import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('API keys', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const createKey = async (token: string, body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/auth/api-keys', { token, body });

  it('returns the full key once at creation and only a masked preview afterwards', async () => {
    const created = await createKey(admin, { name: 'deployer', scopes: ['read:system'] });
    expect(created.statusCode).toBe(201);
    const { key, api_key: view } = created.data.data;
    expect(key).toMatch(/^plat_[A-Za-z0-9_-]{40,}$/);
    expect(view.key_preview).toBe(`plat_…${key.slice(-4)}`);
    expect(view.scopes).toEqual(['read:system']);

    const list = await t.request('GET', '/api/v1/auth/api-keys', { token: admin });
    expect(list.statusCode).toBe(200);
    const listed = list.data.data.api_keys.find((k: { id: string }) => k.id === view.id);
    expect(listed).toMatchObject({ name: 'deployer', key_preview: view.key_preview, is_active: true });
    expect(list.body).not.toContain(key);
    expect(list.body).not.toContain('key_hash');
    expect(Object.keys(listed)).not.toContain('key');
  });

  it('authenticates with X-API-Key on protected routes', async () => {
    const { key } = (await createKey(admin, { name: 'status-reader', scopes: ['read:system'] })).data.data;
    const status = await t.request('GET', '/api/v1/status', { apiKey: key });
    expect(status.statusCode).toBe(200);
    const me = await t.request('GET', '/api/v1/auth/me', { apiKey: key });
    expect(me.data.data).toMatchObject({
      username: 'admin',
      auth_method: 'api_key',
      permissions: ['read:system'],
    });
  });

  it('shows when a key was last used, measured at the use, in the list read right after', async () => {
    const { key, api_key: view } = (await createKey(admin, { name: 'last-used', scopes: ['read:system'] }))
      .data.data;
    // Long enough that the write could not be mistaken for the moment of use.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = Date.now();
    expect((await t.request('GET', '/api/v1/status', { apiKey: key })).statusCode).toBe(200);
    const after = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 50));

    const list = await t.request('GET', '/api/v1/auth/api-keys', { token: admin });
    const listed = list.data.data.api_keys.find((k: { id: string }) => k.id === view.id);
    expect(listed.usage_count).toBe(1);
    expect(listed.last_used).not.toBeNull();
    const usedAt = Date.parse(listed.last_used);
    expect(usedAt).toBeGreaterThanOrEqual(before);
    expect(usedAt).toBeLessThanOrEqual(after);
  });

  it('stops a revoked key at once', async () => {
    const created = (await createKey(admin, { name: 'short-lived' })).data.data;
    expect((await t.request('GET', '/api/v1/status', { apiKey: created.key })).statusCode).toBe(200);
    const revoke = await t.request('DELETE', `/api/v1/auth/api-keys/${created.api_key.id}`, { token: admin });
    expect(revoke.statusCode).toBe(200);
    const after = await t.request('GET', '/api/v1/status', { apiKey: created.key });
    expect(after.statusCode).toBe(401);
    expect(after.data.error.code).toBe('AUTHENTICATION_FAILED');
    expect(after.headers['www-authenticate']).toBe('Bearer');
    const again = await t.request('DELETE', `/api/v1/auth/api-keys/${created.api_key.id}`, { token: admin });
    expect(again.statusCode).toBe(404);
  });

  it("does not let one user revoke another user's key", async () => {
    const other = await t.createUser('key-owner-a');
    const created = (await createKey(other.access, { name: 'mine' })).data.data;
    const res = await t.request('DELETE', `/api/v1/auth/api-keys/${created.api_key.id}`, { token: admin });
    expect(res.statusCode).toBe(404);
    expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
    expect((await t.request('GET', '/api/v1/status', { apiKey: created.key })).statusCode).toBe(200);
  });

  it("refuses scopes the owner does not hold with 403 and accepts the owner's own", async () => {
    const user = await t.createUser('key-owner-b');
    const refused = await createKey(user.access, {
      name: 'too-wide',
      scopes: ['read:system', 'admin:config'],
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error.code).toBe('AUTHORIZATION_DENIED');
    expect(refused.data.error.details.scopes).toEqual(['admin:config']);
    const allowed = await createKey(user.access, { name: 'fits', scopes: ['read:system', 'events:emit'] });
    expect(allowed.statusCode).toBe(201);
    const defaults = await createKey(user.access, { name: 'defaults' });
    expect(defaults.data.data.api_key.scopes).toEqual([
      'events:emit',
      'events:subscribe',
      'read:plugins',
      'read:system',
    ]);
  });

  it('refuses unknown scope names and past expiry dates with 422', async () => {
    const unknown = await createKey(admin, { name: 'typo', scopes: ['read:sytem'] });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.data.error.details.field).toBe('scopes.0');
    const past = await createKey(admin, { name: 'past', expires_at: '2020-01-01T00:00:00.000Z' });
    expect(past.statusCode).toBe(422);
    expect(past.data.error.details.field).toBe('expires_at');
  });

  it('refuses an expired key', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const { key } = (await createKey(admin, { name: 'expiring', expires_at: expiresAt })).data.data;
    expect((await t.request('GET', '/api/v1/status', { apiKey: key })).statusCode).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 3_600_000);
    const res = await t.request('GET', '/api/v1/status', { apiKey: key });
    expect(res.statusCode).toBe(401);
    expect(res.data.error.details.reason).toBe('api_key_expired');
  });

  it('reads expiry times sent with a UTC offset as the instants they are, and shows them in UTC', async () => {
    // 10:00+05:00 an hour ago is 04:00Z: text comparison with a UTC "now" would call it the future.
    const offset = (ms: number, sign: '+' | '-') => {
      const shifted = new Date(Date.now() + ms + (sign === '+' ? 5 : -5) * 3_600_000);
      return `${shifted.toISOString().slice(0, 19)}${sign}05:00`;
    };
    const past = await createKey(admin, { name: 'east', expires_at: offset(-3_600_000, '+') });
    expect(past.statusCode).toBe(422);
    expect(past.data.error.details.field).toBe('expires_at');
    const future = await createKey(admin, { name: 'west', expires_at: offset(2 * 3_600_000, '-') });
    expect(future.statusCode).toBe(201);
    const expiresAt = future.data.data.api_key.expires_at as string;
    expect(expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(3_500_000);
    expect((await t.request('GET', '/api/v1/status', { apiKey: future.data.data.key })).statusCode).toBe(200);
  });

  it('refuses an unknown key', async () => {
    const res = await t.request('GET', '/api/v1/status', {
      apiKey: 'plat_not-a-real-key-at-all-0000000000000000',
    });
    expect(res.statusCode).toBe(401);
    expect(res.data.error.details.reason).toBe('invalid_api_key');
  });

  it('stops the keys of a suspended owner at once', async () => {
    const user = await t.createUser('key-owner-c');
    const { key } = (await createKey(user.access, { name: 'soon-suspended' })).data.data;
    expect((await t.request('GET', '/api/v1/status', { apiKey: key })).statusCode).toBe(200);
    await t.platform.context.users.update(user.id, { status: 'suspended' });
    await t.platform.context.auth.userChanged(user.id);
    const res = await t.request('GET', '/api/v1/status', { apiKey: key });
    expect(res.statusCode).toBe(401);
    expect(res.data.error.details.reason).toBe('account_suspended');
  });

  it("narrows a key when its owner loses a role, and a '*' key follows its owner", async () => {
    const owner = await t.createUser('demoted-admin', ['admin']);
    const all = (await createKey(owner.access, { name: 'everything' })).data.data;
    expect(all.api_key.scopes).toEqual(['*']);
    const narrow = (
      await createKey(owner.access, { name: 'config', scopes: ['admin:config', 'read:system'] })
    ).data.data.key;
    expect((await t.request('GET', '/api/v1/admin/config', { apiKey: all.key })).statusCode).toBe(200);
    await t.platform.context.users.update(owner.id, { roles: JSON.stringify(['user']) });
    await t.platform.context.auth.userChanged(owner.id);
    const demoted = await t.request('GET', '/api/v1/admin/config', { apiKey: all.key });
    expect(demoted.data.error.code).toBe('ADMIN_REQUIRED');
    expect((await t.request('GET', '/api/v1/status', { apiKey: all.key })).statusCode).toBe(200);
    const me = await t.request('GET', '/api/v1/auth/me', { apiKey: narrow });
    expect(me.data.data.permissions).toEqual(['read:system']);
  });

  it("gives a user who is not an admin a '*' key holding what the user holds", async () => {
    const user = await t.createUser('star-key-owner');
    const created = await createKey(user.access, { name: 'all-mine', scopes: ['*'] });
    expect(created.statusCode).toBe(201);
    expect(created.data.data.api_key.scopes).toEqual(['*']);
    const viaKey = await t.request('GET', '/api/v1/auth/me', { apiKey: created.data.data.key });
    const viaToken = await t.request('GET', '/api/v1/auth/me', { token: user.access });
    expect(viaKey.data.data.permissions).toEqual(viaToken.data.data.permissions);
    const admin = await t.request('GET', '/api/v1/admin/config', { apiKey: created.data.data.key });
    expect(admin.data.error.code).toBe('ADMIN_REQUIRED');
  });

  it('refuses an admin key narrowed to read:system on an admin:config route with INSUFFICIENT_ADMIN_PERMISSIONS', async () => {
    const narrow = (await createKey(admin, { name: 'narrow', scopes: ['read:system'] })).data.data.key;
    const refused = await t.request('GET', '/api/v1/admin/config', { apiKey: narrow });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error.code).toBe('INSUFFICIENT_ADMIN_PERMISSIONS');
    expect(refused.data.error.details.required_permission).toBe('admin:config');
    const wide = (await createKey(admin, { name: 'config-admin', scopes: ['admin:config'] })).data.data.key;
    expect((await t.request('GET', '/api/v1/admin/config', { apiKey: wide })).statusCode).toBe(200);
  });
  it("does not let a narrowed key mint a wider one: '*' from a read:system key is refused", async () => {
    const narrow = (await createKey(admin, { name: 'reader', scopes: ['read:system'] })).data.data.key;
    const minted = await t.request('POST', '/api/v1/auth/api-keys', {
      apiKey: narrow,
      body: { name: 'escalated', scopes: ['*'] },
    });
    expect(minted.statusCode).toBe(403);
    expect(minted.data.error).toMatchObject({ code: 'AUTHORIZATION_DENIED', details: { scopes: ['*'] } });
    const list = await t.request('GET', '/api/v1/auth/api-keys', { token: admin });
    expect(list.data.data.api_keys.some((k: { name: string }) => k.name === 'escalated')).toBe(false);
    // What the key holds it may still hand on, and an unrestricted key may still ask for '*'.
    const same = await t.request('POST', '/api/v1/auth/api-keys', {
      apiKey: narrow,
      body: { name: 'same', scopes: ['read:system'] },
    });
    expect(same.statusCode).toBe(201);
    const all = (await createKey(admin, { name: 'all', scopes: ['*'] })).data.data.key;
    const fromAll = await t.request('POST', '/api/v1/auth/api-keys', {
      apiKey: all,
      body: { name: 'all-again', scopes: ['*'] },
    });
    expect(fromAll.statusCode).toBe(201);
    // A user's key narrowed to events:emit cannot mint a '*' key holding the rest of the user's permissions.
    const user = await t.createUser('narrow-key-user');
    const emitter = (await createKey(user.access, { name: 'emit', scopes: ['events:emit'] })).data.data.key;
    const widened = await t.request('POST', '/api/v1/auth/api-keys', {
      apiKey: emitter,
      body: { name: 'wider', scopes: ['*'] },
    });
    expect(widened.statusCode).toBe(403);
    const userStar = (await createKey(user.access, { name: 'mine', scopes: ['*'] })).data.data.key;
    const fromUserStar = await t.request('POST', '/api/v1/auth/api-keys', {
      apiKey: userStar,
      body: { name: 'mine-too', scopes: ['*'] },
    });
    expect(fromUserStar.statusCode).toBe(201);
  });
});
