import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBootConfig } from '../../src/config/load-config.js';
import { eventually } from '../helpers/eventually.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** Attacks on accounts and keys (issue 23 items 8–11, issue 28 item 10), each refused through the public API. */
describe('attacks on accounts and keys', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform({ auth: { max_failed_logins: 3, lockout_minutes: 5 } });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  const createKey = async (token: string, name: string, scopes?: string[]) => {
    const res = await t.request('POST', '/api/v1/auth/api-keys', {
      token,
      body: { name, ...(scopes ? { scopes } : {}) },
    });
    expect(res.statusCode).toBe(201);
    return res.data.data as { key: string; api_key: { id: string } };
  };

  it("does not let an admin key narrowed to write:users change another administrator's e-mail or profile", async () => {
    const other = await t.createUser('second-admin', ['admin']);
    const writer = (await createKey(admin, 'user-writer', ['write:users'])).key;
    for (const body of [
      { email: 'attacker@example.test' },
      { full_name: 'Taken Over' },
      { profile: { bio: 'owned' } },
      { preferences: { theme: 'dark' } },
    ]) {
      const res = await t.request('PATCH', `/api/v1/users/${other.id}`, { apiKey: writer, body });
      expect(res.statusCode).toBe(403);
      expect(res.data.error).toMatchObject({
        code: 'INSUFFICIENT_ADMIN_PERMISSIONS',
        details: { required_permission: 'admin:users' },
      });
    }
    const detail = await t.request('GET', `/api/v1/admin/users/${other.id}`, { token: admin });
    expect(detail.data.data.user.email).not.toBe('attacker@example.test');
    expect(detail.data.data.user.full_name).not.toBe('Taken Over');
    // An ordinary user it still manages; an administrator acting with admin:users still manages administrators.
    const plain = await t.createUser('plain-managed');
    const managed = await t.request('PATCH', `/api/v1/users/${plain.id}`, {
      apiKey: writer,
      body: { full_name: 'Renamed' },
    });
    expect(managed.statusCode).toBe(200);
    const byAdmin = await t.request('PATCH', `/api/v1/users/${other.id}`, {
      token: admin,
      body: { full_name: 'Renamed Admin' },
    });
    expect(byAdmin.statusCode).toBe(200);
  });

  it('does not let a key narrowed to read:system change its owner’s e-mail, password, sessions or keys', async () => {
    const owner = await t.createUser('key-owner', ['user'], 'owner-password-1');
    const other = await t.login('key-owner', 'owner-password-1');
    const reader = await createKey(owner.access, 'monitor', ['read:system']);
    const spare = await createKey(owner.access, 'spare');
    const sessions = await t.request('GET', '/api/v1/auth/sessions', { token: owner.access });
    const otherSession = (sessions.data.data.sessions as { id: string; is_current: boolean }[]).find(
      (s) => !s.is_current,
    )!;
    const attempts = [
      t.request('PATCH', `/api/v1/users/${owner.id}`, {
        apiKey: reader.key,
        body: { email: 'thief@example.test' },
      }),
      t.request('POST', '/api/v1/auth/change-password', {
        apiKey: reader.key,
        body: { current_password: 'owner-password-1', new_password: 'stolen-password-1' },
      }),
      t.request('DELETE', `/api/v1/auth/sessions/${otherSession.id}`, { apiKey: reader.key }),
      t.request('DELETE', `/api/v1/auth/api-keys/${spare.api_key.id}`, { apiKey: reader.key }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.statusCode).toBe(403);
      expect(res.data.error).toMatchObject({
        code: 'AUTHORIZATION_DENIED',
        details: { reason: 'narrowed_api_key' },
      });
    }
    // Nothing changed: the e-mail, the password, the other session and the spare key all still hold.
    const me = await t.request('GET', '/api/v1/auth/me', { token: other.access });
    expect(me.statusCode).toBe(200);
    expect(me.data.data.email).not.toBe('thief@example.test');
    expect((await t.request('GET', '/api/v1/status', { apiKey: spare.key })).statusCode).toBe(200);
    expect((await t.login('key-owner', 'owner-password-1')).access).toBeTruthy();

    // A full key (no scopes: all the owner holds) and a session still manage the account; a key may end itself.
    const selfRevoked = await t.request('DELETE', `/api/v1/auth/api-keys/${reader.api_key.id}`, {
      apiKey: reader.key,
    });
    expect(selfRevoked.statusCode).toBe(200);
    const full = await t.request('PATCH', `/api/v1/users/${owner.id}`, {
      apiKey: spare.key,
      body: { full_name: 'Key Owner' },
    });
    expect(full.statusCode).toBe(200);
    const bySession = await t.request('DELETE', `/api/v1/auth/sessions/${otherSession.id}`, {
      token: owner.access,
    });
    expect(bySession.statusCode).toBe(200);
    const adminStar = (await createKey(admin, 'admin-star', ['*'])).key;
    const changed = await t.request('POST', '/api/v1/auth/change-password', {
      apiKey: adminStar,
      body: { current_password: ADMIN_PASSWORD, new_password: ADMIN_PASSWORD },
    });
    // Reaches the password check (same password refused as unchanged), not the key refusal.
    expect(changed.statusCode).toBe(422);
  });

  it('refuses a short auth.jwt_secret and rate limits of 1e308 with CONFIG_VALIDATION_ERROR, at runtime and at start', async () => {
    const res = await t.request('PATCH', '/api/v1/config', {
      token: admin,
      body: {
        auth: { jwt_secret: 'abcde', refresh_token_ttl_seconds: 300, access_token_ttl_seconds: 900 },
        events: { encryption_key: 'short-key' },
        rate_limits: { auth: { max: 1e308 }, anonymous: { max: 1e308 } },
        server: { environment: 'x'.repeat(1000) },
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.code).toBe('CONFIG_VALIDATION_ERROR');
    const fields = (res.data.error.details.errors as { field: string }[]).map((e) => e.field).sort();
    expect(fields).toEqual([
      'auth.jwt_secret',
      'auth.refresh_token_ttl_seconds',
      'events.encryption_key',
      'rate_limits.anonymous.max',
      'rate_limits.auth.max',
      'server.environment',
    ]);
    expect(res.body).not.toContain('abcde');
    const cfg = await t.request('GET', '/api/v1/config?section=rate_limits', { token: admin });
    expect(cfg.data.data.rate_limits.auth.max).not.toBe(1e308);
    // A long enough secret is accepted.
    const good = await t.request('PATCH', '/api/v1/config', {
      token: admin,
      body: {
        auth: { jwt_secret: 'k9VxQ2mB7rT4wZ8pL1sN6dF3hJ0cY5gAq' },
        rate_limits: { auth: { max: 100_000 } },
      },
    });
    expect(good.statusCode).toBe(200);
    // At start (file or environment), the process refuses to run with such a secret.
    const env = { PLATFORM__AUTH__JWT_SECRET: 'abcde', PLATFORM__RATE_LIMITS__AUTH__MAX: '1e308' };
    expect(() => loadBootConfig({ env, cwd: tmpdir() })).toThrow(
      expect.objectContaining({ code: 'CONFIG_VALIDATION_ERROR' }),
    );
  });

  it('locks a name that belongs to no account exactly as an account, and announces refused locked logins', async () => {
    await t.createUser('lock-real', ['user'], 'right-password-1');
    const attempt = (username: string, password = 'wrong-password-1') =>
      t.request('POST', '/api/v1/auth/login', { body: { username, password } });
    const shape = (res: Awaited<ReturnType<typeof attempt>>) => ({
      status: res.statusCode,
      code: res.data.error.code,
      message: res.data.error.message,
      details: res.data.error.details,
      authenticate: res.headers['www-authenticate'],
    });
    for (let i = 0; i < 4; i++) {
      const real = await attempt('lock-real', i === 3 ? 'right-password-1' : 'wrong-password-1');
      const ghost = await attempt('Lock-Ghost');
      expect(shape(ghost)).toEqual(shape(real));
      expect(real.data.error.details.reason).toBe(i < 3 ? 'invalid_credentials' : 'account_locked');
    }
    const events = async () => {
      const res = await t.request('GET', '/api/v1/events?event_type=auth.login_failed&per_page=100', {
        token: admin,
      });
      return (res.data.data.events as { data_preview: Record<string, unknown> }[]).map((e) => e.data_preview);
    };
    const announced = await eventually(async () => {
      const locked = (await events()).filter((d) => d['reason'] === 'account_locked');
      return (
        locked.some((d) => d['username'] === 'lock-real') &&
        locked.some((d) => d['username'] === 'Lock-Ghost')
      );
    });
    expect(announced, 'auth.login_failed with reason account_locked for both names').toBe(true);
  });
});

describe('the work spent on a name that belongs to no account', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    // A cost well above the test default, so the hash dominates the time of a login.
    t = await startPlatform({
      auth: { argon2_memory_kib: 65_536, argon2_time_cost: 3, max_failed_logins: 100 },
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  });

  it('is the work of checking a real password: the decoy hash has the configured argon2 cost', async () => {
    await t.createUser('timed-real', ['user'], 'right-password-1');
    // The process's CPU time for each login (the hash runs on libuv's threads of this process): the work done,
    // without the time a commit waited for the disk, which a busy machine's disk makes vary by tens of ms.
    const timed = async (username: string) => {
      const started = process.cpuUsage();
      const res = await t.request('POST', '/api/v1/auth/login', {
        body: { username, password: 'wrong-password-1' },
      });
      expect(res.statusCode).toBe(401);
      const used = process.cpuUsage(started);
      return (used.user + used.system) / 1000;
    };
    await timed('timed-warm-up');
    const real: number[] = [];
    const ghost: number[] = [];
    for (let i = 0; i < 7; i++) {
      real.push(await timed('timed-real'));
      ghost.push(await timed(`timed-ghost-${i}`));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const ratio = median(ghost) / median(real);
    expect(ratio).toBeGreaterThan(0.6);
    expect(ratio).toBeLessThan(2);
  }, 60_000);
});

describe('token refreshes and the login rate limit', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ rate_limits: { auth: { max: 3, window_seconds: 600 } } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('does not spend the login bucket on refreshes of a valid session; refused refreshes still count', async () => {
    await t.createUser('reloader', ['user'], 'reloader-password-1');
    const office = '203.0.113.50';
    const login = () =>
      t.request('POST', '/api/v1/auth/login', {
        remoteAddress: office,
        body: { username: 'reloader', password: 'reloader-password-1' },
      });
    const refresh = (token: string) =>
      t.request('POST', '/api/v1/auth/refresh', { remoteAddress: office, body: { refresh_token: token } });
    const first = await login();
    expect(first.statusCode).toBe(200);
    let token = first.data.data.refresh_token as string;
    // Ten reloads of the console, each a refresh: more than the bucket holds.
    for (let i = 0; i < 10; i++) {
      const res = await refresh(token);
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBeDefined();
      token = res.data.data.refresh_token;
    }
    expect((await login()).statusCode).toBe(200);
    // Refresh tokens that are not valid are guesses: they count, and past the limit are answered 429.
    expect((await refresh('not-a-real-refresh-token')).statusCode).toBe(401);
    const limited = await refresh('another-made-up-refresh-token');
    expect(limited.statusCode).toBe(429);
    expect(limited.data.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: { bucket: 'auth' } });
    expect(limited.data.error.retry_after).toBeGreaterThan(0);
    // The valid session goes on all the same; password logins from the address are limited.
    expect((await refresh(token)).statusCode).toBe(200);
    expect((await login()).statusCode).toBe(429);
  });
});
