import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('access tokens and the 401 answer', () => {
  let t: TestPlatform;
  let secret: Uint8Array;
  let claims: { sub: string; sid: string };
  beforeAll(async () => {
    t = await startPlatform();
    secret = new TextEncoder().encode(await t.platform.context.systemState.get<string>('auth.jwt_secret'));
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    const me = await t.request('GET', '/api/v1/auth/me', { token: login.data.data.access_token });
    claims = { sub: me.data.data.id, sid: me.data.data.session_id };
  });
  afterAll(async () => {
    await t.close();
  });

  const mint = (key: Uint8Array, expiresAt = Math.floor(Date.now() / 1000) + 600) =>
    new SignJWT({ sid: claims.sid, scope: '*' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuer('platform')
      .setJti('jti_test')
      .setIssuedAt()
      .setExpirationTime(expiresAt)
      .sign(key);

  const expect401 = async (headers: Record<string, string>, reason?: string) => {
    const res = await t.request('GET', '/api/v1/status', { headers });
    expect(res.statusCode).toBe(401);
    expect(res.data.success).toBe(false);
    expect(res.data.error.code).toBe('AUTHENTICATION_FAILED');
    expect(res.headers['www-authenticate']).toBe('Bearer');
    if (reason) expect(res.data.error.details.reason).toBe(reason);
    return res;
  };

  it('accepts a token signed with the platform key (the control for the cases below)', async () => {
    const res = await t.request('GET', '/api/v1/status', { token: await mint(secret) });
    expect(res.statusCode).toBe(200);
  });

  it('answers a request without credentials with 401 and WWW-Authenticate: Bearer', async () => {
    await expect401({}, 'missing_credentials');
  });

  it('refuses malformed Authorization headers', async () => {
    for (const value of ['Basic YWRtaW46cGFzcw==', 'Bearer', 'Bearer a b', 'Bearer not.a.jwt', 'token abc']) {
      await expect401({ authorization: value }, 'invalid_token');
    }
  });

  it('refuses a token signed with another key', async () => {
    await expect401(
      { authorization: `Bearer ${await mint(new TextEncoder().encode('x'.repeat(64)))}` },
      'invalid_token',
    );
  });

  it('refuses an unsigned token (alg: none)', async () => {
    const unsigned = new UnsecuredJWT({ sid: claims.sid, scope: '*' })
      .setSubject(claims.sub)
      .setIssuer('platform')
      .setIssuedAt()
      .setExpirationTime('10m')
      .encode();
    await expect401({ authorization: `Bearer ${unsigned}` }, 'invalid_token');
  });

  it('refuses an expired token', async () => {
    const expired = await mint(secret, Math.floor(Date.now() / 1000) - 60);
    await expect401({ authorization: `Bearer ${expired}` }, 'invalid_token');
  });

  it('refuses a well-signed token whose session does not exist', async () => {
    const token = await new SignJWT({ sid: 'ses_doesnotexist', scope: '*' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(claims.sub)
      .setIssuer('platform')
      .setExpirationTime('10m')
      .sign(secret);
    await expect401({ authorization: `Bearer ${token}` }, 'session_revoked');
  });

  it('refuses the token of a revoked session', async () => {
    const { access } = await t.login('admin', ADMIN_PASSWORD);
    const me = await t.request('GET', '/api/v1/auth/me', { token: access });
    const admin = await t.adminToken();
    const revoke = await t.request('DELETE', `/api/v1/auth/sessions/${me.data.data.session_id}`, {
      token: admin,
    });
    expect(revoke.statusCode).toBe(200);
    await expect401({ authorization: `Bearer ${access}` }, 'session_revoked');
  });

  it("refuses a suspended user's token at once, and their login", async () => {
    const user = await t.createUser('to-be-suspended');
    expect((await t.request('GET', '/api/v1/status', { token: user.access })).statusCode).toBe(200);
    await t.platform.context.users.update(user.id, { status: 'suspended' });
    await t.platform.context.auth.userChanged(user.id);
    await expect401({ authorization: `Bearer ${user.access}` }, 'account_suspended');
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'to-be-suspended', password: 'user-password-1' },
    });
    expect(login.statusCode).toBe(401);
    expect(login.data.error.details.reason).toBe('account_suspended');
    const refresh = await t.request('POST', '/api/v1/auth/refresh', {
      body: { refresh_token: user.refresh },
    });
    expect(refresh.statusCode).toBe(401);
  });

  it('ignores a bad token on a public route', async () => {
    const res = await t.request('POST', '/api/v1/auth/login', {
      headers: { authorization: 'Bearer garbage' },
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(res.statusCode).toBe(200);
  });
});
