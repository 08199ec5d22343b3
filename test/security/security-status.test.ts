import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** Polls until `read` returns a value that `done` accepts (the security monitor records events asynchronously). */
async function eventually<T>(
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('security status', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const status = async () => (await t.request('GET', '/api/v1/security/status', { token: admin })).data.data;

  it('reports measured figures: failed logins, blocked IPs, active sessions, API key usage', async () => {
    const before = await status();
    expect(before.metrics).toMatchObject({ failed_logins_24h: 0, blocked_ips: 0, api_key_usage: 0 });
    expect(before.metrics.active_sessions).toBe(1);

    for (const username of ['admin', 'nobody-at-all', 'admin']) {
      await t.request('POST', '/api/v1/auth/login', { body: { username, password: 'wrong-password' } });
    }
    const afterFailures = await eventually(status, (s) => s.metrics.failed_logins_24h === 3);
    expect(afterFailures.metrics.failed_logins_24h).toBe(3);

    const u = await t.createUser('status-user');
    const blocked = await t.request('POST', '/api/v1/admin/security/block-ip', {
      token: admin,
      body: { ip_address: '203.0.113.0/24', reason: 'test', duration_hours: 1 },
    });
    expect(blocked.statusCode).toBeLessThan(300);
    const key = await t.request('POST', '/api/v1/auth/api-keys', {
      token: u.access,
      body: { name: 'status' },
    });
    for (let i = 0; i < 3; i++) {
      expect((await t.request('GET', '/api/v1/auth/me', { apiKey: key.data.data.key })).statusCode).toBe(200);
    }
    // Key use is written behind, every few seconds.
    const after = await eventually(status, (s) => s.metrics.api_key_usage === 3);
    expect(after.metrics).toMatchObject({
      failed_logins_24h: 3,
      blocked_ips: 1,
      active_sessions: 2,
      api_key_usage: 3,
      api_keys_used_24h: 1,
      active_api_keys: 1,
    });

    await t.request('POST', '/api/v1/auth/logout', { token: u.access });
    expect((await status()).metrics.active_sessions).toBe(1);
  }, 20_000);

  it('requires admin:security', async () => {
    const u = await t.createUser('status-peeker', ['moderator']);
    const res = await t.request('GET', '/api/v1/security/status', { token: u.access });
    expect(res.statusCode).toBe(403);
    expect(res.data.error.code).toBe('AUTHORIZATION_DENIED');
    expect((await t.request('GET', '/api/v1/security/status')).statusCode).toBe(401);
  });
});

describe('security status of a fresh platform', () => {
  let fresh: TestPlatform;
  beforeAll(async () => {
    fresh = await startPlatform();
  }, 60_000);
  afterAll(async () => {
    await fresh.close();
  }, 60_000);

  it('is secure with nothing open, and turns to warning with an unresolved alert', async () => {
    const token = await fresh.adminToken();
    const read = async () => (await fresh.request('GET', '/api/v1/security/status', { token })).data.data;
    expect(await read()).toMatchObject({ status: 'secure', last_scan: null, open_alerts: 0, alerts: [] });
    await fresh.request('POST', '/api/v1/admin/users', {
      token,
      body: {
        username: 'second-admin',
        email: 'second@example.test',
        password: 'long-enough-1',
        roles: ['admin'],
      },
    });
    const withAlert = await eventually(read, (s) => s.open_alerts === 1);
    expect(withAlert.status).toBe('warning');
    expect(withAlert.alerts[0]).toMatchObject({ type: 'new_admin_user', severity: 'medium', status: 'open' });
  });
});
