import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('lockout after failed logins', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ auth: { max_failed_logins: 3, lockout_minutes: 5 } });
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const attempt = (username: string, password: string) =>
    t.request('POST', '/api/v1/auth/login', { body: { username, password } });

  it('locks the account after max_failed_logins failures, even for the right password, for lockout_minutes', async () => {
    await t.createUser('locked-out', ['user'], 'right-password-1');
    for (let i = 0; i < 3; i++) {
      const res = await attempt('locked-out', 'wrong-password');
      expect(res.statusCode).toBe(401);
      expect(res.data.error.details.reason).toBe('invalid_credentials');
    }
    const locked = await attempt('locked-out', 'right-password-1');
    expect(locked.statusCode).toBe(401);
    expect(locked.data.error).toMatchObject({
      code: 'AUTHENTICATION_FAILED',
      details: { reason: 'account_locked' },
    });

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 4 * 60_000);
    expect((await attempt('locked-out', 'right-password-1')).data.error.details.reason).toBe(
      'account_locked',
    );
    vi.setSystemTime(Date.now() + 2 * 60_000);
    expect((await attempt('locked-out', 'right-password-1')).statusCode).toBe(200);
  });

  it('resets the count on a successful login', async () => {
    await t.createUser('almost-locked', ['user'], 'right-password-1');
    for (let i = 0; i < 2; i++) await attempt('almost-locked', 'wrong-password');
    expect((await attempt('almost-locked', 'right-password-1')).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) await attempt('almost-locked', 'wrong-password');
    expect((await attempt('almost-locked', 'right-password-1')).statusCode).toBe(200);
  });

  it('starts a fresh count once a lockout has run out', async () => {
    await t.createUser('relocked', ['user'], 'right-password-1');
    for (let i = 0; i < 3; i++) await attempt('relocked', 'wrong-password');
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 6 * 60_000);
    expect((await attempt('relocked', 'wrong-password')).data.error.details.reason).toBe(
      'invalid_credentials',
    );
    expect((await attempt('relocked', 'right-password-1')).statusCode).toBe(200);
  });

  it('answers an unknown user like a wrong password', async () => {
    const res = await attempt('nobody-here', 'whatever-password');
    expect(res.statusCode).toBe(401);
    expect(res.data.error.details.reason).toBe('invalid_credentials');
  });
  it('checks at most max_failed_logins passwords of many attempts sent at once', async () => {
    const user = await t.createUser('burst-target', ['user'], 'right-password-1');
    const guesses = await Promise.all(
      Array.from({ length: 24 }, (_, i) => attempt('burst-target', `wrong-password-${i}`)),
    );
    const reasons = guesses.map((r) => r.data.error.details.reason as string);
    expect(guesses.every((r) => r.statusCode === 401)).toBe(true);
    // Only the attempts whose password was checked are answered invalid_credentials; the rest found it locked.
    expect(reasons.filter((r) => r === 'invalid_credentials').length).toBeLessThanOrEqual(3);
    expect(reasons.filter((r) => r === 'account_locked').length).toBeGreaterThanOrEqual(21);
    const admin = await t.adminToken();
    const detail = await t.request('GET', `/api/v1/admin/users/${user.id}`, { token: admin });
    expect(detail.data.data.user.metadata.failed_login_attempts).toBeLessThanOrEqual(3);
    expect(detail.data.data.user.metadata.locked_until).not.toBeNull();
    expect((await attempt('burst-target', 'right-password-1')).data.error.details.reason).toBe(
      'account_locked',
    );
  });

  it('does not count the right password of a suspended user as a failed attempt', async () => {
    const user = await t.createUser('suspended-right', ['user'], 'right-password-1');
    const admin = await t.adminToken();
    await t.request('POST', `/api/v1/admin/users/${user.id}/suspend`, { token: admin, body: {} });
    for (let i = 0; i < 4; i++) {
      expect((await attempt('suspended-right', 'right-password-1')).data.error.details.reason).toBe(
        'account_suspended',
      );
    }
    const detail = await t.request('GET', `/api/v1/admin/users/${user.id}`, { token: admin });
    expect(detail.data.data.user.metadata).toMatchObject({ failed_login_attempts: 0, locked_until: null });
  });
});
