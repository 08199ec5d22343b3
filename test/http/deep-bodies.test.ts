import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// A body nested thousands of levels deep is well under the size limit; serializing or storing it overflowed the
// stack, which answered 500 on the routes without a nesting check of their own.
describe('request bodies nested too deep', () => {
  let t: TestPlatform;
  let token: string;
  beforeAll(async () => {
    t = await startPlatform();
    token = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
  const send = (method: string, url: string, body: string) =>
    t.request(method, url, { token, body, headers: { 'content-type': 'application/json' } });

  it('are refused with 422 naming the limit, on any route', async () => {
    for (const [method, url, body] of [
      ['PUT', '/api/v1/config', `{"settings":{"x":${nested(5000)}}}`],
      ['PATCH', '/api/v1/config', `{"x":${nested(5000)}}`],
      ['POST', '/api/v1/auth/login', `{"username":${'['.repeat(5000)}${']'.repeat(5000)}}`],
    ] as const) {
      const res = await send(method, url, body);
      expect(res.statusCode, `${method} ${url} ${res.body.slice(0, 300)}`).toBe(422);
      expect(res.data.error).toMatchObject({
        code: 'VALIDATION_ERROR',
        message: 'The request body nests deeper than 128 levels',
        details: { field: 'body' },
      });
    }
  });

  it('leave a configuration unchanged after the refusal', async () => {
    const before = (await t.request('GET', '/api/v1/config', { token })).data.data;
    await send('PATCH', '/api/v1/config', `{"x":${nested(5000)}}`);
    expect((await t.request('GET', '/api/v1/config', { token })).data.data).toEqual(before);
  });

  it('count only brackets outside strings, and let a body of ordinary depth through', async () => {
    const res = await send(
      'POST',
      '/api/v1/events',
      JSON.stringify({
        event_type: 'deep.text',
        data: { text: '{['.repeat(2000), inner: JSON.parse(nested(50)) },
      }),
    );
    expect(res.statusCode).toBe(201);
  });

  it('leave event data to its own check, which names the field', async () => {
    const res = await send('POST', '/api/v1/events', `{"event_type":"deep.data","data":${nested(110)}}`);
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details.field).toBe('data');
  });
});
