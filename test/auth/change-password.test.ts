import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('changing a password', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });

  const change = (token: string, current_password: string, new_password: string) =>
    t.request('POST', '/api/v1/auth/change-password', { token, body: { current_password, new_password } });

  it('refuses a wrong current password with 401', async () => {
    const user = await t.createUser('pw-wrong');
    const res = await change(user.access, 'not-my-password', 'a-brand-new-password');
    expect(res.statusCode).toBe(401);
    expect(res.data.error).toMatchObject({
      code: 'AUTHENTICATION_FAILED',
      details: { field: 'current_password' },
    });
    expect((await t.request('GET', '/api/v1/auth/me', { token: user.access })).statusCode).toBe(200);
  });

  it('lets only one of two changes sent at once succeed; the other is told its current password is wrong', async () => {
    const user = await t.createUser('pw-race');
    const second = await t.login('pw-race', 'user-password-1');
    const [a, b] = await Promise.all([
      change(user.access, 'user-password-1', 'new-password-aaa'),
      change(second.access, 'user-password-1', 'new-password-bbb'),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 401]);
    const won = a.statusCode === 200 ? 'new-password-aaa' : 'new-password-bbb';
    const lost = won === 'new-password-aaa' ? 'new-password-bbb' : 'new-password-aaa';
    const login = (password: string) =>
      t.request('POST', '/api/v1/auth/login', { body: { username: 'pw-race', password } });
    expect((await login(won)).statusCode).toBe(200);
    expect((await login(lost)).statusCode).toBe(401);
    // The winner's session stays; the loser's, opened with the old password, ends with it.
    const winner = a.statusCode === 200 ? user.access : second.access;
    expect((await t.request('GET', '/api/v1/auth/me', { token: winner })).statusCode).toBe(200);
  });

  it('refuses a new password shorter than the minimum with 422 naming the field', async () => {
    const user = await t.createUser('pw-short');
    const res = await change(user.access, 'user-password-1', 'short');
    expect(res.statusCode).toBe(422);
    expect(res.data.error.code).toBe('VALIDATION_ERROR');
    expect(res.data.error.details.field).toBe('new_password');
  });

  it('refuses a new password equal to the current one', async () => {
    const user = await t.createUser('pw-same');
    const res = await change(user.access, 'user-password-1', 'user-password-1');
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details).toMatchObject({ field: 'new_password', reason: 'unchanged' });
  });

  it('refuses a body with a missing field with 422', async () => {
    const user = await t.createUser('pw-missing');
    const res = await t.request('POST', '/api/v1/auth/change-password', {
      token: user.access,
      body: { new_password: 'a-brand-new-password' },
    });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details.field).toBe('current_password');
  });

  it('changes the password: the old one is refused, the new one accepted, password_change_required cleared', async () => {
    const { createPasswordHasher } = await import('../../src/auth/passwords.js');
    const hasher = createPasswordHasher(1024, 1);
    await t.platform.context.users.create({
      username: 'pw-changer',
      email: 'pw-changer@example.test',
      passwordHash: await hasher.hash('first-password-1'),
      roles: ['user'],
      passwordChangeRequired: true,
    });
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'pw-changer', password: 'first-password-1' },
    });
    expect(login.data.data.password_change_required).toBe(true);
    const other = await t.login('pw-changer', 'first-password-1');
    const token = login.data.data.access_token as string;

    const res = await change(token, 'first-password-1', 'second-password-2');
    expect(res.statusCode).toBe(200);
    expect(res.data).toMatchObject({ success: true, message: 'Password changed' });

    const old = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'pw-changer', password: 'first-password-1' },
    });
    expect(old.statusCode).toBe(401);
    const fresh = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'pw-changer', password: 'second-password-2' },
    });
    expect(fresh.statusCode).toBe(200);
    expect(fresh.data.data.password_change_required).toBe(false);
    const me = await t.request('GET', '/api/v1/auth/me', { token });
    expect(me.statusCode).toBe(200);
    expect(me.data.data.password_change_required).toBe(false);
    // Other sessions end with the old password; the caller's own session stays.
    const otherMe = await t.request('GET', '/api/v1/auth/me', { token: other.access });
    expect(otherMe.statusCode).toBe(401);
    expect(otherMe.data.error.details.reason).toBe('session_revoked');
  });
});
