import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('secrets in logs', () => {
  let t: TestPlatform;
  const lines: string[] = [];
  beforeAll(async () => {
    t = await startPlatform(
      { logging: { level: 'trace' } },
      { logStream: { write: (line) => lines.push(line) } },
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('never writes passwords, tokens or API keys sent in requests to the log', async () => {
    const secrets: string[] = [ADMIN_PASSWORD];
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    const { access_token: access, refresh_token: refresh } = login.data.data;
    secrets.push(access, refresh);
    const refreshed = await t.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: refresh } });
    secrets.push(refreshed.data.data.refresh_token, refreshed.data.data.access_token);
    // A reused refresh token takes the failure path.
    await t.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: refresh } });
    const token = (await t.login('admin', ADMIN_PASSWORD)).access;
    secrets.push(token);
    const created = await t.request('POST', '/api/v1/auth/api-keys', { token, body: { name: 'logged?' } });
    const key = created.data.data.key as string;
    secrets.push(key);
    await t.request('GET', '/api/v1/status', { apiKey: key });
    await t.request('GET', `/api/v1/status?token=${token}&api_key=${key}`);
    await t.request('GET', `/api/v1/no-such-route?access_token=${token}`);
    const wrong = 'wrong-password-for-the-log-test';
    secrets.push(wrong);
    await t.request('POST', '/api/v1/auth/login', { body: { username: 'admin', password: wrong } });
    const newPassword = 'a-new-password-for-the-log-test';
    secrets.push(newPassword);
    await t.request('POST', '/api/v1/auth/change-password', {
      token,
      body: { current_password: ADMIN_PASSWORD, new_password: newPassword },
    });
    const malformed = `{"username":"admin","password":"${'malformed-secret-1'}"`;
    secrets.push('malformed-secret-1');
    await t.platform.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: malformed,
    });

    const log = lines.join('');
    // The capture works: every request was logged, with its scrubbed URL.
    expect(log).toContain('incoming request');
    expect(log).toContain('/api/v1/status?token=[REDACTED]&api_key=[REDACTED]');
    for (const secret of secrets) {
      expect(log.includes(secret), `a secret of ${secret.length} characters appears in the log`).toBe(false);
    }
    expect(log).not.toContain(key.slice(5, 20));
  });
});
