import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** One route of each kind: core read, admin read and write, event emit, resource update, delete, stream. */
const ROUTES: { method: string; url: string; body?: unknown }[] = [
  { method: 'GET', url: '/api/v1/status' },
  { method: 'GET', url: '/api/v1/admin/users' },
  {
    method: 'POST',
    url: '/api/v1/admin/users',
    body: { username: 'never-made', email: 'never@example.test', password: 'never-made-password' },
  },
  { method: 'POST', url: '/api/v1/events', body: { event_type: 'auth.test', data: {} } },
  { method: 'PUT', url: '/api/v1/users/usr_someone', body: { full_name: 'x' } },
  { method: 'DELETE', url: '/api/v1/events/subscriptions/sub_someone' },
  { method: 'GET', url: '/api/v1/auth/api-keys' },
  { method: 'GET', url: '/api/v1/events/stream' },
];

describe('tokens minted with jose that must be refused on every kind of route', () => {
  let t: TestPlatform;
  let secret: Uint8Array;
  let admin: { sub: string; sid: string };
  const cases: { name: string; token: () => Promise<string> }[] = [];

  beforeAll(async () => {
    t = await startPlatform();
    secret = new TextEncoder().encode(await t.platform.context.systemState.get<string>('auth.jwt_secret'));
    const me = await t.request('GET', '/api/v1/auth/me', { token: await t.adminToken() });
    admin = { sub: me.data.data.id, sid: me.data.data.session_id };
    const mint = (key: Uint8Array, claims: { sub: string; sid: string }, exp: number) =>
      new SignJWT({ sid: claims.sid, scope: '*' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(claims.sub)
        .setIssuer('platform')
        .setJti('jti_negative')
        .setIssuedAt()
        .setExpirationTime(exp)
        .sign(key);
    const inTenMinutes = Math.floor(Date.now() / 1000) + 600;

    // A revoked session: the user logs out, the access token of that session stays well signed.
    const revoked = await t.createUser('revoked-user', ['admin']);
    expect((await t.request('POST', '/api/v1/auth/logout', { token: revoked.access })).statusCode).toBe(200);
    // A suspended user: an admin's token, then the account is suspended.
    const suspended = await t.createUser('suspended-user', ['admin']);
    const suspend = await t.request('POST', `/api/v1/admin/users/${suspended.id}/suspend`, {
      token: await t.adminToken(),
      body: { reason: 'negative auth test', notify_user: false },
    });
    expect(suspend.statusCode).toBe(200);

    cases.push(
      {
        name: 'alg none',
        token: async () =>
          new UnsecuredJWT({ sid: admin.sid, scope: '*' })
            .setSubject(admin.sub)
            .setIssuer('platform')
            .setIssuedAt()
            .setExpirationTime('10m')
            .encode(),
      },
      {
        name: 'wrong key',
        token: () => mint(new TextEncoder().encode('k'.repeat(64)), admin, inTenMinutes),
      },
      { name: 'expired', token: () => mint(secret, admin, Math.floor(Date.now() / 1000) - 5) },
      { name: 'revoked session', token: async () => revoked.access },
      { name: 'suspended user', token: async () => suspended.access },
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('accepts a well-formed admin token on the same routes (the control)', async () => {
    const good = await new SignJWT({ sid: admin.sid, scope: '*' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(admin.sub)
      .setIssuer('platform')
      .setJti('jti_control')
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(secret);
    const res = await t.request('GET', '/api/v1/admin/users', { token: good });
    expect(res.statusCode).toBe(200);
  });

  it('refuses alg none, a wrong key, an expired token, a revoked session and a suspended user with 401', async () => {
    const problems: string[] = [];
    for (const c of cases) {
      const token = await c.token();
      for (const r of ROUTES) {
        // The stream takes the token in the query (browsers cannot set headers there).
        const stream = r.url.endsWith('/stream');
        const res = await t.request(
          r.method,
          stream ? `${r.url}?token=${encodeURIComponent(token)}` : r.url,
          {
            ...(stream ? {} : { token }),
            ...(r.body === undefined ? {} : { body: r.body }),
          },
        );
        if (res.statusCode !== 401 || res.data?.error?.code !== 'AUTHENTICATION_FAILED')
          problems.push(`${c.name}: ${r.method} ${r.url} → ${res.statusCode} ${res.data?.error?.code ?? ''}`);
      }
    }
    expect(problems).toEqual([]);
    // Nothing was created by any of them.
    const users = await t.request('GET', '/api/v1/admin/users?search=never-made', {
      token: await t.adminToken(),
    });
    expect(users.data.data.users).toEqual([]);
  });
});
