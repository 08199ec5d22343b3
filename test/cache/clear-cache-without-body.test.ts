import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheService } from '../../src/cache/cache-service.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const cacheOf = (t: TestPlatform) => t.platform.context.registry.get('cache') as CacheService;

// POST /api/v1/admin/system/clear-cache with no body means the defaults: every cache type, pattern `*`.
describe('clearing every cache type with no request body', () => {
  let t: TestPlatform;
  let token: string;

  beforeAll(async () => {
    t = await startPlatform();
    token = await t.adminToken();
  });
  afterAll(async () => t?.close());

  const variants: [string, Record<string, string>][] = [
    ['no body and no content type', {}],
    ['Content-Type: application/json and an empty body', { 'content-type': 'application/json' }],
    [
      'Content-Type: application/json; charset=utf-8 and an empty body',
      { 'content-type': 'application/json; charset=utf-8' },
    ],
  ];

  for (const [name, headers] of variants) {
    it(`clears every type with ${name}`, async () => {
      const cache = cacheOf(t);
      const responses = cache.namespace('api_responses');
      const plugin = cache.namespace('plugin_cache:no-body');
      await responses.set('k', 1);
      await plugin.set('k', 2);

      const res = await t.request('POST', '/api/v1/admin/system/clear-cache', { token, headers });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.data.data).toMatchObject({
        cache_types: ['user_sessions', 'api_responses', 'plugin_cache'],
        pattern: '*',
      });
      expect(res.data.data.cleared_keys).toBeGreaterThanOrEqual(2);
      expect(await responses.get('k')).toBeUndefined();
      expect(await plugin.get('k')).toBeUndefined();
    });
  }

  it('still validates a body that is sent', async () => {
    const res = await t.request('POST', '/api/v1/admin/system/clear-cache', {
      token,
      body: { cache_types: ['everything'] },
    });
    expect(res.statusCode).toBe(422);
  });
});
