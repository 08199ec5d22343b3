/** The cache types an operator clears by name (`POST /api/v1/admin/system/clear-cache`). */
export const CACHE_TYPES = ['user_sessions', 'api_responses', 'plugin_cache'] as const;
export type CacheType = (typeof CACHE_TYPES)[number];

/**
 * A namespaced view of the cache: keys are stored as `<namespace>:<key>`, so clearing a namespace
 * never touches another's entries. Values are anything JSON can carry.
 *
 * @example
 * const cache = platform.cache.namespace('plugin_cache:weather');
 * await cache.set('forecast:berlin', { high: 21 }, 600);
 * const forecast = await cache.get<{ high: number }>('forecast:berlin');
 * await cache.clear('forecast:*');
 */
export interface CacheNamespace {
  readonly name: string;
  /** The value, or undefined when no level holds it (or it expired). */
  get<T = unknown>(key: string): Promise<T | undefined>;
  /** Stores a value on every level of the namespace; `ttlSeconds` defaults to `cache.default_ttl_seconds`. */
  set(key: string, value: unknown, ttlSeconds?: number): Promise<void>;
  delete(key: string): Promise<boolean>;
  /** Removes the namespace's keys matching a glob (default `*`: all of them); resolves to how many. */
  clear(pattern?: string): Promise<number>;
  /**
   * The cached value, or the computed one (then cached). A clear that lands while `compute` runs
   * keeps its result out of the cache, so a value read before a change is never stored after it.
   */
  getOrCompute<T>(key: string, compute: () => Promise<T>, ttlSeconds?: number): Promise<T>;
}

const PLUGIN_NAMESPACE = /^plugin_cache:[a-z0-9][a-z0-9._-]{0,127}$/;

/** `user_sessions`, `api_responses`, `plugin_cache`, or a plugin's own `plugin_cache:<plugin id>`. */
export function isNamespaceName(name: string): boolean {
  return (CACHE_TYPES as readonly string[]).includes(name) || PLUGIN_NAMESPACE.test(name);
}
