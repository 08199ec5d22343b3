import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/auth/token-hash.js';
import { insideOneWindow } from '../helpers/fixed-window.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// Day-long windows: a fixed window that rolled over in the middle of a test would reset its counter.
const DAY = 86_400;
const LIMITS = {
  rate_limits: {
    authenticated: { max: 5, window_seconds: DAY },
    anonymous: { max: 3, window_seconds: DAY },
    auth: { max: 6, window_seconds: DAY },
  },
};

describe('rate limits', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    // Not a day that ends while the file's limits are spent (a file of a few seconds; two minutes' margin).
    await insideOneWindow(DAY, 120_000);
    t = await startPlatform(LIMITS);
  }, 200_000);
  afterAll(async () => {
    await t.close();
  });

  it('sends the four headers on every limited response, then 429 with retry_after past the limit', async () => {
    const user = await t.createUser('limited-user');
    const windowEnd = Math.ceil((Date.now() + 1) / (DAY * 1000)) * DAY;
    for (let i = 1; i <= 5; i++) {
      const res = await t.request('GET', '/api/v1/status', { token: user.access });
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('5');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(5 - i));
      expect(res.headers['x-ratelimit-window']).toBe(String(DAY));
      expect(Number(res.headers['x-ratelimit-reset'])).toBe(windowEnd);
    }
    const over = await t.request('GET', '/api/v1/status', { token: user.access });
    expect(over.statusCode).toBe(429);
    expect(over.data.error.code).toBe('RATE_LIMIT_EXCEEDED');
    const retryAfter = over.data.error.retry_after;
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(DAY);
    expect(Number(over.headers['retry-after'])).toBe(retryAfter);
    expect(over.headers['x-ratelimit-remaining']).toBe('0');
    expect(over.headers['x-ratelimit-limit']).toBe('5');
    expect(over.data.request_id).toBe(over.headers['x-request-id']);
  });

  it('counts each principal separately: another user and an API key of the same user have their own buckets', async () => {
    const a = await t.createUser('bucket-a');
    const b = await t.createUser('bucket-b');
    const key = (await t.request('POST', '/api/v1/auth/api-keys', { token: a.access, body: { name: 'k' } }))
      .data.data.key;
    for (let i = 0; i < 4; i++) await t.request('GET', '/api/v1/status', { token: a.access });
    expect((await t.request('GET', '/api/v1/status', { token: a.access })).statusCode).toBe(429);
    const other = await t.request('GET', '/api/v1/status', { token: b.access });
    expect(other.statusCode).toBe(200);
    expect(other.headers['x-ratelimit-remaining']).toBe('4');
    const viaKey = await t.request('GET', '/api/v1/status', { apiKey: key });
    expect(viaKey.statusCode).toBe(200);
    expect(viaKey.headers['x-ratelimit-remaining']).toBe('4');
  });

  it('counts anonymous requests per client IP, refusals included', async () => {
    for (let i = 1; i <= 3; i++) {
      const res = await t.request('GET', '/api/v1/status', { remoteAddress: '198.51.100.1' });
      expect(res.statusCode).toBe(401);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(3 - i));
    }
    const over = await t.request('GET', '/openapi.json', { remoteAddress: '198.51.100.1' });
    expect(over.statusCode).toBe(429);
    const elsewhere = await t.request('GET', '/api/v1/status', { remoteAddress: '198.51.100.2' });
    expect(elsewhere.statusCode).toBe(401);
    expect(elsewhere.headers['x-ratelimit-remaining']).toBe('2');
  });

  it('puts login and refused refreshes in the auth bucket per client IP, and a valid refresh in its user’s', async () => {
    const ip = '198.51.100.10';
    const first = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: ip,
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('6');
    expect(first.headers['x-ratelimit-remaining']).toBe('5');
    const refreshed = await t.request('POST', '/api/v1/auth/refresh', {
      remoteAddress: ip,
      body: { refresh_token: first.data.data.refresh_token },
    });
    expect(refreshed.statusCode).toBe(200);
    // Renewing a valid session is not guessing a secret: it counts in the user's bucket, not the address's.
    expect(refreshed.headers['x-ratelimit-limit']).toBe('5');
    const refused = await t.request('POST', '/api/v1/auth/refresh', {
      remoteAddress: ip,
      body: { refresh_token: 'not-a-refresh-token' },
    });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['x-ratelimit-remaining']).toBe('4');
    for (let i = 0; i < 4; i++) {
      await t.request('POST', '/api/v1/auth/login', {
        remoteAddress: ip,
        body: { username: 'admin', password: 'x' },
      });
    }
    const over = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: ip,
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(over.statusCode).toBe(429);
    expect(over.data.error.details.bucket).toBe('auth');
    const elsewhere = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: '198.51.100.11',
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(elsewhere.statusCode).toBe(200);
    // The principal's own bucket is untouched by logins: /auth/me counts there.
    const me = await t.request('GET', '/api/v1/auth/me', {
      token: first.data.data.access_token,
      remoteAddress: ip,
    });
    expect(me.headers['x-ratelimit-limit']).toBe('5');
  });

  it('answers a refresh past the auth limit with a token of no live session 429 before any write', async () => {
    const ip = '198.51.100.40';
    const db = t.platform.context.database.db;
    const login = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: '198.51.100.41',
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(login.statusCode).toBe(200);
    // A session that has ended by its time: its refresh token is stale, though never used.
    const stale = login.data.data.refresh_token as string;
    const { session_id: sessionId } = await db
      .selectFrom('refresh_tokens')
      .select('session_id')
      .where('token_hash', '=', sha256Hex(stale))
      .executeTakeFirstOrThrow();
    await db
      .updateTable('sessions')
      .set({ expires_at: '2000-01-01T00:00:00.000Z' })
      .where('id', '=', sessionId)
      .execute();
    const session = () =>
      db.selectFrom('sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow();
    const tokens = () =>
      db.selectFrom('refresh_tokens').selectAll().where('session_id', '=', sessionId).execute();
    const before = { session: await session(), tokens: await tokens() };
    expect(before.tokens.map((r) => r.used_at)).toEqual([null]);

    const refresh = (token: string) =>
      t.request('POST', '/api/v1/auth/refresh', { remoteAddress: ip, body: { refresh_token: token } });
    for (let i = 0; i < 6; i++) expect((await refresh(`guessed-refresh-token-${i}`)).statusCode).toBe(401);
    for (const token of ['guessed-refresh-token-6', stale]) {
      const limited = await refresh(token);
      expect(limited.statusCode, limited.body).toBe(429);
      expect(limited.data.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: { bucket: 'auth' } });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    }
    // The stale token was not taken in (nor a new one issued, nor the session touched): no transaction ran.
    expect(await tokens()).toEqual(before.tokens);
    expect(await session()).toEqual(before.session);
  });

  it('sends the headers on refusals from the handler and from validation too', async () => {
    const invalid = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: '198.51.100.30',
      body: { username: 'admin' },
    });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.headers['x-ratelimit-limit']).toBe('6');
    expect(invalid.headers['x-ratelimit-remaining']).toBe('5');
    const wrong = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: '198.51.100.30',
      body: { username: 'admin', password: 'wrong-password' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['x-ratelimit-remaining']).toBe('4');
    expect(wrong.headers['x-ratelimit-reset']).toBeDefined();
    expect(wrong.headers['x-ratelimit-window']).toBe(String(DAY));
  });

  it('never limits /health and /ready', async () => {
    for (let i = 0; i < 8; i++) {
      const health = await t.request('GET', '/api/v1/health', { remoteAddress: '198.51.100.20' });
      expect(health.statusCode).toBe(200);
      expect(health.headers['x-ratelimit-limit']).toBeUndefined();
      const ready = await t.request('GET', '/api/v1/ready', { remoteAddress: '198.51.100.20' });
      expect(ready.statusCode).toBe(200);
      expect(ready.headers['x-ratelimit-limit']).toBeUndefined();
    }
    const counted = await t.request('GET', '/api/v1/status', { remoteAddress: '198.51.100.20' });
    expect(counted.headers['x-ratelimit-remaining']).toBe('2');
  });
});

describe('the client address behind proxies', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ ...LIMITS, server: { trusted_proxies: ['10.0.0.1', '10.1.0.0/16'] } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('believes X-Forwarded-For from a listed proxy', async () => {
    for (const client of ['203.0.113.1', '203.0.113.2']) {
      const res = await t.request('GET', '/api/v1/status', {
        remoteAddress: '10.0.0.1',
        headers: { 'x-forwarded-for': client },
      });
      expect(res.headers['x-ratelimit-remaining']).toBe('2');
    }
    const viaRange = await t.request('GET', '/api/v1/status', {
      remoteAddress: '10.1.2.3',
      headers: { 'x-forwarded-for': '203.0.113.1' },
    });
    expect(viaRange.headers['x-ratelimit-remaining']).toBe('1');
    const login = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: '10.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.50' },
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    const sessions = await t.request('GET', '/api/v1/auth/sessions', { token: login.data.data.access_token });
    const current = sessions.data.data.sessions.find((s: { is_current: boolean }) => s.is_current);
    expect(current.ip_address).toBe('203.0.113.50');
  });

  it('reads an address sent with a port as the address alone', async () => {
    // One client, three ports: one rate-limit bucket (each port had a bucket of its own).
    for (const [i, client] of ['203.0.113.60:5001', '203.0.113.60:5002', '203.0.113.60'].entries()) {
      const res = await t.request('GET', '/api/v1/status', {
        remoteAddress: '10.0.0.1',
        headers: { 'x-forwarded-for': client },
      });
      expect(res.headers['x-ratelimit-remaining'], client).toBe(String(2 - i));
    }
    const v6 = await t.request('GET', '/api/v1/status', {
      remoteAddress: '10.0.0.1',
      headers: { 'x-forwarded-for': '[2001:db8::60]:5003' },
    });
    expect(v6.headers['x-ratelimit-remaining']).toBe('2');
    const again = await t.request('GET', '/api/v1/status', {
      remoteAddress: '10.0.0.1',
      headers: { 'x-forwarded-for': '2001:db8::60' },
    });
    expect(again.headers['x-ratelimit-remaining']).toBe('1');
  });

  it('ignores X-Forwarded-For from anyone else', async () => {
    for (let i = 1; i <= 3; i++) {
      const res = await t.request('GET', '/api/v1/status', {
        remoteAddress: '192.0.2.9',
        headers: { 'x-forwarded-for': `203.0.113.${100 + i}` },
      });
      expect(res.headers['x-ratelimit-remaining']).toBe(String(3 - i));
    }
    const spoofed = await t.request('GET', '/api/v1/status', {
      remoteAddress: '192.0.2.9',
      headers: { 'x-forwarded-for': '203.0.113.200' },
    });
    expect(spoofed.statusCode).toBe(429);
  });

  it('takes the first address not in the list when proxies are chained', async () => {
    const res = await t.request('GET', '/api/v1/status', {
      remoteAddress: '10.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.77, 192.0.2.55, 10.1.0.9' },
    });
    expect(res.headers['x-ratelimit-remaining']).toBe('2');
    const same = await t.request('GET', '/api/v1/status', {
      remoteAddress: '10.0.0.1',
      headers: { 'x-forwarded-for': '198.18.0.1, 192.0.2.55' },
    });
    // 192.0.2.55 is not a listed proxy, so it is the client in both requests.
    expect(same.headers['x-ratelimit-remaining']).toBe('1');
  });
});

// Starting a second instance (and, in cluster mode, its connections) takes a while on a busy machine.
const MULTI_INSTANCE_MS = 30_000;

describe('rate limits across instances', () => {
  let a: TestPlatform;
  let b: TestPlatform;
  beforeAll(async () => {
    a = await startPlatform(LIMITS);
    b = await startPlatform(LIMITS, { storage: a.storage });
  }, MULTI_INSTANCE_MS);
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it(
    'shares one limit between instances in cluster mode (counters in Redis), one per process when embedded',
    async () => {
      for (let i = 0; i < 3; i++)
        await a.request('GET', '/api/v1/status', { remoteAddress: '198.51.100.99' });
      const onB = await b.request('GET', '/api/v1/status', { remoteAddress: '198.51.100.99' });
      if (a.backend === 'cluster') {
        expect(onB.statusCode).toBe(429);
        expect(onB.data.error.code).toBe('RATE_LIMIT_EXCEEDED');
      } else {
        // Embedded mode is a single process by design; a second one keeps its own counters.
        expect(onB.statusCode).toBe(401);
        expect(onB.headers['x-ratelimit-remaining']).toBe('2');
      }
    },
    MULTI_INSTANCE_MS,
  );
});
