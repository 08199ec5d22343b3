import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('login, refresh and logout', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });

  it('logs the first admin in with the configured password and reads /auth/me', async () => {
    const res = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(res.statusCode).toBe(200);
    expect(res.data.data).toMatchObject({
      token_type: 'Bearer',
      user: { username: 'admin', roles: ['admin'] },
    });
    const me = await t.request('GET', '/api/v1/auth/me', { token: res.data.data.access_token });
    expect(me.statusCode).toBe(200);
    expect(me.data.data).toMatchObject({ username: 'admin', auth_method: 'jwt' });
  });

  it('refuses a wrong password with AUTHENTICATION_FAILED and WWW-Authenticate', async () => {
    const res = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'admin', password: 'wrong-password' },
    });
    expect(res.statusCode).toBe(401);
    expect(res.data.error.code).toBe('AUTHENTICATION_FAILED');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('revokes the whole session when a rotated refresh token is used again', async () => {
    const first = await t.login('admin', ADMIN_PASSWORD);
    const rotated = await t.request('POST', '/api/v1/auth/refresh', {
      body: { refresh_token: first.refresh },
    });
    expect(rotated.statusCode).toBe(200);
    const reuse = await t.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: first.refresh } });
    expect(reuse.statusCode).toBe(401);
    expect(reuse.data.error.details.reason).toBe('refresh_token_reused');
    const afterTheft = await t.request('POST', '/api/v1/auth/refresh', {
      body: { refresh_token: rotated.data.data.refresh_token },
    });
    expect(afterTheft.statusCode).toBe(401);
    const me = await t.request('GET', '/api/v1/auth/me', { token: rotated.data.data.access_token });
    expect(me.statusCode).toBe(401);
  });

  it('stops the access token at once on logout', async () => {
    const { access } = await t.login('admin', ADMIN_PASSWORD);
    expect((await t.request('GET', '/api/v1/auth/me', { token: access })).statusCode).toBe(200);
    expect((await t.request('POST', '/api/v1/auth/logout', { token: access })).statusCode).toBe(200);
    const after = await t.request('GET', '/api/v1/auth/me', { token: access });
    expect(after.statusCode).toBe(401);
    expect(after.data.error.details.reason).toBe('session_revoked');
  });
});
