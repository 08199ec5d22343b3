import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheService } from '../../src/cache/cache-service.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const cacheOf = (t: TestPlatform) => t.platform.context.registry.get('cache') as CacheService;

/** Polls until `check` holds (cross-instance messages arrive asynchronously). */
async function eventually(check: () => Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('cache service', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts real hits and misses of a namespace and reports each level', async () => {
    const cache = cacheOf(t);
    const ns = cache.namespace('plugin_cache:stats-test');
    const before = await cache.status();
    await ns.set('present', { n: 1 });
    expect(await ns.get('present')).toEqual({ n: 1 });
    expect(await ns.get('absent')).toBeUndefined();
    const after = await cache.status();
    expect(after.hits - before.hits).toBe(1);
    expect(after.misses - before.misses).toBe(1);

    const res = await t.request('GET', '/api/v1/cache/status', { token: admin });
    expect(res.statusCode).toBe(200);
    const s = res.data.data;
    expect(s.status).toBe('healthy');
    const { total_hits, total_misses, hit_rate, miss_rate } = s.statistics;
    expect(total_hits).toBeGreaterThanOrEqual(after.hits);
    expect(hit_rate).toBeCloseTo(total_hits / (total_hits + total_misses), 3);
    expect(hit_rate + miss_rate).toBeCloseTo(1, 3);
    expect(s.memory_usage.total_mb).toBe(64);
    expect(s.memory_usage.used_mb + s.memory_usage.available_mb).toBeCloseTo(64, 2);
    const l1 = s.cache_levels.find((l: { level: string }) => l.level === 'L1');
    expect(l1).toMatchObject({ type: 'memory' });
    expect(l1.entries).toBeGreaterThanOrEqual(1);
    expect(l1.size_mb).toBeGreaterThan(0);
    if (t.backend === 'cluster') {
      const l2 = s.cache_levels.find((l: { level: string }) => l.level === 'L2');
      expect(l2).toMatchObject({ type: 'redis' });
      expect(l2.entries).toBeGreaterThanOrEqual(1);
    } else {
      expect(s.cache_levels).toHaveLength(1);
    }
  });

  it('evicts least recently used entries beyond cache.l1_max_entries and counts the evictions', async () => {
    const small = await startPlatform({ cache: { l1_max_entries: 10 } });
    try {
      const cache = cacheOf(small);
      const ns = cache.namespace('plugin_cache:lru');
      for (let i = 0; i < 15; i++) await ns.set(`k${i}`, i);
      const l1 = cache.l1().statsSync();
      expect(l1.entries).toBe(10);
      expect(l1.evictions).toBe(5);
      expect((await cache.status()).evictions).toBeGreaterThanOrEqual(5);
    } finally {
      await small.close();
    }
  }, 30_000);

  it('clears by glob from the query string, on every level by default', async () => {
    const ns = cacheOf(t).namespace('plugin_cache:glob');
    await ns.set('x:1', 1);
    await ns.set('x:2', 2);
    await ns.set('y:1', 3);
    const res = await t.request('DELETE', '/api/v1/cache?pattern=plugin_cache:glob:x:*', { token: admin });
    expect(res.statusCode).toBe(200);
    const levels = t.backend === 'cluster' ? ['L1', 'L2'] : ['L1'];
    expect(res.data.data).toEqual({
      cleared_keys: 2 * levels.length,
      pattern: 'plugin_cache:glob:x:*',
      levels,
    });
    expect(await ns.get('x:1')).toBeUndefined();
    expect(await ns.get('x:2')).toBeUndefined();
    expect(await ns.get('y:1')).toBe(3);
  });

  it('reads glob patterns the way Redis does, on L1 and L2 alike', async () => {
    const cache = cacheOf(t);
    const ns = cache.namespace('plugin_cache:globs');
    const keys = ['a:1', 'a:2', 'b:1', 'c:1', 'a:[x]', 'a?', 'a:1/2'];
    const cases: [string, number][] = [
      ['a:?', 2],
      ['a:*', 4],
      ['[ab]:1', 2],
      ['[^a]:1', 2],
      ['[a-b]:?', 3],
      ['a:\\[x\\]', 1],
      ['a\\?', 1],
      ['*/*', 1],
    ];
    for (const [glob, expected] of cases) {
      for (const k of keys) await ns.set(k, k);
      const pattern = `plugin_cache:globs:${glob}`;
      expect((await cache.clear(pattern, 'L1')).cleared_keys, `L1 ${glob}`).toBe(expected);
      if (t.backend === 'cluster')
        expect((await cache.clear(pattern, 'L2')).cleared_keys, `L2 ${glob}`).toBe(expected);
      await ns.clear();
    }
  });

  it('takes pattern and level from the body, and clears only the level asked for', async () => {
    const ns = cacheOf(t).namespace('plugin_cache:levels');
    await ns.set('k', 'v');
    const res = await t.request('DELETE', '/api/v1/cache', {
      token: admin,
      body: { pattern: 'plugin_cache:levels:*', level: 'L1' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.data.data).toEqual({ cleared_keys: 1, pattern: 'plugin_cache:levels:*', levels: ['L1'] });
    // With L2 (cluster), the value is still there and comes back into L1 from Redis.
    expect(await ns.get('k')).toBe(t.backend === 'cluster' ? 'v' : undefined);
  });

  it('refuses a bad level, unknown fields, and callers without write:cache', async () => {
    const bad = await t.request('DELETE', '/api/v1/cache?level=L3', { token: admin });
    expect(bad.statusCode).toBe(422);
    expect(bad.data.error.code).toBe('VALIDATION_ERROR');
    const extra = await t.request('DELETE', '/api/v1/cache', { token: admin, body: { everything: true } });
    expect(extra.statusCode).toBe(422);
    const user = await t.createUser('cache-user', ['user']);
    const denied = await t.request('DELETE', '/api/v1/cache', { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('AUTHORIZATION_DENIED');
    const status = await t.request('GET', '/api/v1/cache/status', { token: user.access });
    expect(status.statusCode).toBe(200);
  });

  it('keeps auth lookups in the user_sessions namespace; clearing them keeps users logged in', async () => {
    const user = await t.createUser('session-cache-user', ['user']);
    expect((await t.request('GET', '/api/v1/auth/me', { token: user.access })).statusCode).toBe(200);
    const res = await t.request('POST', '/api/v1/admin/system/clear-cache', {
      token: admin,
      body: { cache_types: ['user_sessions'] },
    });
    expect(res.statusCode).toBe(200);
    // At least the caller's and the user's session and user rows were cached.
    expect(res.data.data.cleared_keys).toBeGreaterThanOrEqual(2);
    expect(res.data.data).toMatchObject({ cache_types: ['user_sessions'], pattern: '*', levels: ['L1'] });
    expect((await t.request('GET', '/api/v1/auth/me', { token: user.access })).statusCode).toBe(200);
  });

  it('still rejects a revoked session at once although sessions are cached', async () => {
    const { access } = await t.login('admin', 'admin-password-1');
    expect((await t.request('GET', '/api/v1/auth/me', { token: access })).statusCode).toBe(200);
    await t.request('POST', '/api/v1/auth/logout', { token: access });
    expect((await t.request('GET', '/api/v1/auth/me', { token: access })).statusCode).toBe(401);
  });

  it('clears cache types by pattern with an audit entry, and leaves other types alone', async () => {
    const cache = cacheOf(t);
    const plugin = cache.namespace('plugin_cache:typed');
    const responses = cache.namespace('api_responses');
    await plugin.set('a', 1);
    await responses.set('typed-test', 2);
    const res = await t.request('POST', '/api/v1/admin/system/clear-cache', {
      token: admin,
      body: { cache_types: ['plugin_cache'], pattern: 'typed:*' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.cleared_keys).toBe(t.backend === 'cluster' ? 2 : 1);
    expect(await plugin.get('a')).toBeUndefined();
    expect(await responses.get('typed-test')).toBe(2);
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'system.clear_cache')
      .execute();
    expect(audit.length).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(audit.at(-1)!.details)).toMatchObject({
      cache_types: ['plugin_cache'],
      pattern: 'typed:*',
    });
  });

  it('refuses an unknown cache type and needs the admin role', async () => {
    const bad = await t.request('POST', '/api/v1/admin/system/clear-cache', {
      token: admin,
      body: { cache_types: ['everything'] },
    });
    expect(bad.statusCode).toBe(422);
    const user = await t.createUser('not-admin-cache', ['moderator']);
    const denied = await t.request('POST', '/api/v1/admin/system/clear-cache', {
      token: user.access,
      body: {},
    });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('ADMIN_REQUIRED');
  });

  it('reaches the L1 of every instance when an admin clears a cache type', async () => {
    // Cluster: a second instance on the same PostgreSQL and Redis. Embedded: one process is the only instance.
    const other = t.backend === 'cluster' ? await startPlatform({}, { storage: t.storage }) : t;
    try {
      const here = cacheOf(t).namespace('plugin_cache:shared');
      const there = cacheOf(other).namespace('plugin_cache:shared');
      await here.set('greeting', 'hello');
      expect(await there.get('greeting')).toBe('hello');
      // The other instance now holds its own L1 copy; a changed value must not be shadowed by it.
      await here.set('greeting', 'hello again');
      await eventually(async () => (await there.get('greeting')) === 'hello again');
      const res = await t.request('POST', '/api/v1/admin/system/clear-cache', {
        token: admin,
        body: { cache_types: ['plugin_cache'], pattern: 'shared:*' },
      });
      expect(res.statusCode).toBe(200);
      await eventually(async () => (await there.get('greeting')) === undefined);
      expect(cacheOf(other).l1().getSync('plugin_cache:shared:greeting')).toBeUndefined();
    } finally {
      if (other !== t) await other.close();
    }
  }, 30_000);
});
