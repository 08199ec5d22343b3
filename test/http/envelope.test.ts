import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('the envelope, request ids and bad input', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ server: { body_limit_bytes: 4096 } });
  });
  afterAll(async () => {
    await t.close();
  });

  const raw = (payload: string, contentType = 'application/json') =>
    t.platform.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': contentType },
      payload,
    });

  it('echoes a well-formed X-Request-Id and makes one for anything else', async () => {
    const echoed = await t.request('GET', '/api/v1/health', {
      headers: { 'x-request-id': 'client-123.abc:x_y' },
    });
    expect(echoed.headers['x-request-id']).toBe('client-123.abc:x_y');
    for (const bad of ['has spaces', 'x'.repeat(129), '<script>', '']) {
      const res = await t.request('GET', '/api/v1/ready', { headers: { 'x-request-id': bad } });
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-z]{26}$/);
      expect(res.data.request_id).toBe(res.headers['x-request-id']);
    }
  });

  it('gives each answer of the shared /status snapshot its own request_id in the same envelope', async () => {
    const token = await t.adminToken();
    const [a, b] = await Promise.all(
      ['trace-a', 'trace-b'].map((id) =>
        t.request('GET', '/api/v1/status', { token, headers: { 'x-request-id': id } }),
      ),
    );
    for (const [res, id] of [
      [a!, 'trace-a'],
      [b!, 'trace-b'],
    ] as const) {
      expect(Object.keys(res.data)).toEqual(['success', 'data', 'timestamp', 'request_id']);
      expect(res.data).toMatchObject({ success: true, request_id: id });
      expect(res.data.timestamp).toMatch(ISO);
    }
    expect(a!.data.data.components.database.status).toBe('healthy');
  });

  it('puts success, timestamp and request_id on success and error bodies alike', async () => {
    const okRes = await t.request('GET', '/api/v1/ready', { headers: { 'x-request-id': 'trace-ok' } });
    expect(okRes.data).toMatchObject({ success: true, request_id: 'trace-ok' });
    expect(okRes.data.timestamp).toMatch(ISO);
    const errRes = await t.request('GET', '/api/v1/status', { headers: { 'x-request-id': 'trace-err' } });
    expect(errRes.statusCode).toBe(401);
    expect(errRes.data).toMatchObject({ success: false, request_id: 'trace-err' });
    expect(errRes.data.timestamp).toMatch(ISO);
    expect(errRes.headers['x-request-id']).toBe('trace-err');
    expect(errRes.headers['content-type']).toMatch(/^application\/json/);
  });

  it('answers an unknown route with a 404 RESOURCE_NOT_FOUND envelope', async () => {
    const res = await t.request('GET', '/api/v1/no-such-thing');
    expect(res.statusCode).toBe(404);
    expect(res.data).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    expect(res.data.request_id).toBe(res.headers['x-request-id']);
  });

  it('answers malformed JSON, an empty body and a wrong content type with 400 VALIDATION_ERROR', async () => {
    for (const res of [
      await raw('{"username": "admin", '),
      await raw(''),
      await raw('username=admin&password=x', 'application/x-www-form-urlencoded'),
      await raw('hello', 'text/plain'),
    ]) {
      expect(res.statusCode, res.body).toBe(400);
      const body = res.json();
      expect(body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
      expect(body.request_id).toBe(res.headers['x-request-id']);
    }
  });

  it('answers requests that need no body when a client sends Content-Type: application/json with none', async () => {
    const user = await t.createUser('json-header-everywhere');
    const send = (method: 'DELETE' | 'POST', url: string, token: string) =>
      t.platform.app.inject({
        method,
        url,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      });
    const sub = await t.request('POST', '/api/v1/events/subscriptions', {
      token: user.access,
      body: { event_patterns: ['json.header'], webhook_config: { url: 'https://hooks.example.com/in' } },
    });
    expect(sub.statusCode).toBe(201);
    const deleted = await send(
      'DELETE',
      `/api/v1/events/subscriptions/${sub.data.data.subscription.subscription_id}`,
      user.access,
    );
    expect(deleted.statusCode, deleted.body).toBe(200);
    const logout = await send('POST', '/api/v1/auth/logout', user.access);
    expect(logout.statusCode, logout.body).toBe(200);
    expect((await t.request('GET', '/api/v1/auth/me', { token: user.access })).statusCode).toBe(401);
    // A route that needs a body still says it is missing.
    const login = await t.platform.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/json' },
    });
    expect(login.statusCode).toBe(400);
    expect(login.json().error.details).toMatchObject({ field: 'body', reason: 'is required' });
  });

  it('answers a body over server.body_limit_bytes with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await raw(JSON.stringify({ username: 'admin', password: 'x'.repeat(5000) }));
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('answers a schema failure with 422 and the field, reason and every error', async () => {
    const res = await t.request('POST', '/api/v1/auth/login', { body: { username: 42 } });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.code).toBe('VALIDATION_ERROR');
    const { field, reason, errors } = res.data.error.details;
    expect(typeof field).toBe('string');
    expect(typeof reason).toBe('string');
    expect(errors.map((e: { field: string }) => e.field)).toEqual(expect.arrayContaining(['password']));
    const unknownField = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'admin', password: ADMIN_PASSWORD, remember_me: true },
    });
    expect(unknownField.statusCode).toBe(422);
    expect(unknownField.data.error.details).toMatchObject({ field: 'remember_me', reason: 'unknown field' });
  });

  it('refuses numbers that are not finite, in queries and bodies, with 422 naming the field', async () => {
    const admin = await t.adminToken();
    for (const query of ['per_page=Infinity', 'page=1e400', 'per_page=-Infinity', 'page=Infinity']) {
      for (const path of [
        '/api/v1/admin/users',
        '/api/v1/events',
        '/api/v1/admin/audit-log',
        '/api/v1/tasks',
      ]) {
        const res = await t.request('GET', `${path}?${query}`, { token: admin });
        expect(res.statusCode, `${path}?${query} → ${res.body}`).toBe(422);
        expect(res.data.error.details).toMatchObject({
          field: query.split('=')[0],
          reason: 'must be a finite number',
        });
      }
    }
    const emit = (body: string) =>
      t.platform.app.inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
        payload: body,
      });
    const priority = await emit('{"event_type":"finite.check","data":{},"priority":"Infinity"}');
    expect(priority.statusCode).toBe(422);
    expect(priority.json().error.details.field).toBe('priority');
    // 1e400 parses to Infinity, which would have been stored as null: refused rather than changed.
    const data = await emit('{"event_type":"finite.check","data":{"amount":[1,1e400]}}');
    expect(data.statusCode).toBe(422);
    expect(data.json().error.details.field).toBe('data.amount.1');
    const listed = await t.request('GET', '/api/v1/events?event_type=finite.check', { token: admin });
    expect(listed.data.data.events).toEqual([]);
  });

  it('answers a JSON body that is not an object with 422, and gives platform checks an errors list', async () => {
    for (const payload of ['"admin"', '42', 'true', 'null', '[1]']) {
      const res = await raw(payload);
      expect(res.statusCode, payload).toBe(422);
      expect(res.json().error.details.reason, payload).toBe('must be object');
    }
    const user = await t.createUser('short-password-changer');
    const res = await t.request('POST', '/api/v1/auth/change-password', {
      token: user.access,
      body: { current_password: 'user-password-1', new_password: 'short' },
    });
    expect(res.statusCode).toBe(422);
    const { field, reason, errors } = res.data.error.details;
    expect(field).toBe('new_password');
    expect(errors).toEqual([{ field, reason }]);
  });

  it('never answers nasty login bodies with a 5xx', async () => {
    const bodies = [
      '[]',
      'null',
      '42',
      '"admin"',
      'true',
      '{"username": null, "password": null}',
      '{"username": ["admin"], "password": {"$gt": ""}}',
      '{"__proto__": {"admin": true}, "username": "admin", "password": "x"}',
      '{"constructor": {"prototype": {"admin": true}}, "username": "admin", "password": "x"}',
      '{"username": "admin\\u0000", "password": "x"}',
      '{"email": "\\u0000@example.test", "password": "x"}',
      '{"username": "\' OR 1=1 --", "password": "\' OR 1=1 --"}',
      '{"username": "😀🔥", "password": "\\ud800"}',
      `{"username": "${'a'.repeat(300)}", "password": "x"}`,
      `{"username": "admin", "password": "${'p'.repeat(1500)}"}`,
      '{"password": "x"}',
      '{"username": "admin", "password": ""}',
      '{"username": "admin", "password": "x", "password": "y"}',
      `${'['.repeat(2000)}${']'.repeat(2000)}`,
    ];
    for (const payload of bodies) {
      const res = await raw(payload);
      expect(res.statusCode, `${payload.slice(0, 60)} → ${res.body}`).toBeLessThan(500);
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(res.json().success).toBe(false);
      expect(res.body).not.toMatch(/at .+\.(ts|js):\d+/);
    }
  });

  it('never answers nasty ids, headers and query strings with a 5xx', async () => {
    const admin = await t.adminToken();
    for (const url of [
      '/api/v1/auth/sessions/%00',
      '/api/v1/auth/api-keys/%E0%A4%A',
      '/api/v1/auth/sessions/..%2F..%2Fetc%2Fpasswd',
      '/api/v1/status?format=%00',
      '/api/v1/status?format[]=a&format[]=b',
      `/api/v1/auth/sessions/${'x'.repeat(500)}`,
    ]) {
      const method = url.includes('status') ? 'GET' : 'DELETE';
      const res = await t.request(method, url, { token: admin });
      expect(res.statusCode, `${url} → ${res.body}`).toBeLessThan(500);
    }
    for (const apiKey of ['plat_\u00e9\u00e8', 'x'.repeat(5000), "plat_' OR 1=1 --"]) {
      const res = await t.request('GET', '/api/v1/status', { headers: { 'x-api-key': apiKey } });
      expect(res.statusCode).toBe(401);
    }
  });
});
