import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheService } from '../../src/cache/cache-service.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const cacheOf = (t: TestPlatform) => t.platform.context.registry.get('cache') as CacheService;
const levelsOf = (t: TestPlatform) => (t.backend === 'cluster' ? 2 : 1);

/**
 * L1 reads a clear's glob exactly as Redis `SCAN MATCH` (L2) does: over UTF-8 bytes, with `\` escapes inside
 * classes. Before, L1 read `[\]]` as "`\` then `]`" and `?` as one UTF-16 unit, so the two levels cleared
 * different keys and a key could survive a clear in one of them.
 */
describe('cache clear globs read as Redis reads them, on every level', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  const clear = (pattern: string) =>
    t.request('DELETE', `/api/v1/cache?pattern=${encodeURIComponent(pattern)}`, { token: admin });

  it('an escaped `]` inside a class is that character', async () => {
    const ns = cacheOf(t).namespace('plugin_cache:glob-class');
    await ns.set(']', 1);
    await ns.set('\\]', 2);
    const res = await clear('plugin_cache:glob-class:[\\]]');
    expect(res.statusCode).toBe(200);
    expect(res.data.data.cleared_keys).toBe(levelsOf(t));
    expect(await ns.get(']')).toBeUndefined();
    expect(await ns.get('\\]')).toBe(2);
  });

  it('`?` is one byte, so a two-byte character takes `??`', async () => {
    const ns = cacheOf(t).namespace('plugin_cache:glob-bytes');
    await ns.set('e', 1);
    await ns.set('é', 2);
    const one = await clear('plugin_cache:glob-bytes:?');
    expect(one.data.data.cleared_keys).toBe(levelsOf(t));
    expect(await ns.get('e')).toBeUndefined();
    expect(await ns.get('é')).toBe(2);
    const two = await clear('plugin_cache:glob-bytes:??');
    expect(two.data.data.cleared_keys).toBe(levelsOf(t));
    expect(await ns.get('é')).toBeUndefined();
  });

  it('an empty class matches nothing, and `[^x]` takes one byte', async () => {
    const ns = cacheOf(t).namespace('plugin_cache:glob-empty');
    await ns.set(']', 1);
    await ns.set('ü', 2);
    const empty = await clear('plugin_cache:glob-empty:[]]');
    expect(empty.data.data.cleared_keys).toBe(0);
    expect(await ns.get(']')).toBe(1);
    const negated = await clear('plugin_cache:glob-empty:[^x]');
    expect(negated.data.data.cleared_keys).toBe(levelsOf(t));
    expect(await ns.get(']')).toBeUndefined();
    expect(await ns.get('ü')).toBe(2);
  });
});
