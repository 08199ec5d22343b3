import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheService } from '../../src/cache/cache-service.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const cacheOf = (t: TestPlatform) => t.platform.context.registry.get('cache') as CacheService;
const levelsOf = (t: TestPlatform) => (t.backend === 'cluster' ? 2 : 1);

describe('clearing the cache by glob classes', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('reads a reversed range as Redis does (ends swapped) instead of failing with a 500', async () => {
    const ns = cacheOf(t).namespace('plugin_cache:glob-range');
    await ns.set('m1', 1);
    await ns.set('m2', 2);
    await ns.set('M1', 3);
    const res = await t.request('DELETE', '/api/v1/cache?pattern=plugin_cache:glob-range:[z-a]1', {
      token: admin,
    });
    expect(res.statusCode).toBe(200);
    // Each level holding the key removes it: L1, and L2 (Redis) in cluster mode.
    expect(res.data.data.cleared_keys).toBe(levelsOf(t));
    expect(await ns.get('m1')).toBeUndefined();
    expect(await ns.get('m2')).toBe(2);
    expect(await ns.get('M1')).toBe(3);
  });

  it('accepts reversed ranges and escaped characters in the admin clear too', async () => {
    const ns = cacheOf(t).namespace('plugin_cache:glob-admin');
    await ns.set('k-1', 1);
    await ns.set('k51', 2);
    const res = await t.request('POST', '/api/v1/admin/system/clear-cache', {
      token: admin,
      body: { cache_types: ['plugin_cache'], pattern: 'glob-admin:k[\\-9-0]1' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.cleared_keys).toBe(2 * levelsOf(t));
    expect(await ns.get('k-1')).toBeUndefined();
    expect(await ns.get('k51')).toBeUndefined();
  });
});
