import { randomUUID } from 'node:crypto';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { withDeadline } from '../kernel/with-deadline.js';
import type { CacheLevel, LevelStats } from './cache-level.js';
import { type CacheNamespace, isNamespaceName } from './cache-namespace.js';
import { escapeGlob } from './glob-pattern.js';
import { LocalCache, type LocalCacheHost } from './local-cache.js';
import { MemoryCacheLevel } from './memory/memory-cache-level.js';

/** Tells the other instances to drop L1 keys matching a glob (their L2 is the same Redis, already cleared). */
const INVALIDATE_CHANNEL = 'cache.invalidate';
type Invalidation = { origin: string; pattern: string };

export type ClearLevel = 'L1' | 'L2' | 'all';

export interface CacheLevelReport extends LevelStats {
  level: 'L1' | 'L2';
  type: 'memory' | 'redis';
  hit_rate: number;
  miss_rate: number;
}

export interface CacheStatus {
  status: ServiceHealth['status'];
  l1MaxBytes: number;
  hits: number;
  misses: number;
  evictions: number;
  levels: CacheLevelReport[];
}

const MIB = 1024 * 1024;
/** How long a health check waits for the Redis level's ping. */
const L2_PING_TIMEOUT_MS = 1000;
const L1_KEYS = ['cache.l1_max_entries', 'cache.l1_max_mb', 'cache.default_ttl_seconds'];

/**
 * The `cache` service: L1 in process (LRU, bounded by entries and bytes), L2 in Redis when `redis.url` is set.
 * Namespaces keep users apart; clears by glob reach every instance. Statistics are this instance's lookups.
 */
export class CacheService implements PlatformService, LocalCacheHost {
  readonly name = 'cache';
  readonly type = 'cache';
  readonly dependencies = [] as const;
  private memory: MemoryCacheLevel;
  private redis: CacheLevel | undefined;
  private readonly instance = randomUUID();
  /** Bumped by every clear seen here, so a value computed across a clear is not cached (getOrCompute). */
  private generation = 0;
  private hits = 0;
  private misses = 0;
  private readonly unsubscribe: () => void;
  private readonly unwatch: () => void;

  constructor(
    private readonly deps: {
      cfg: () => PlatformConfig;
      shared: SharedState;
      onConfigChange: (listener: (keys: string[]) => void) => () => void;
      /** Opens L2; the default connects to `redis.url` when it is set. */
      connectL2?: () => CacheLevel | undefined;
    },
  ) {
    this.memory = this.createL1();
    this.unsubscribe = deps.shared.subscribe(INVALIDATE_CHANNEL, (m) => {
      const message = m as Invalidation;
      if (message.origin === this.instance || typeof message.pattern !== 'string') return;
      this.generation += 1;
      this.memory.clearSync(message.pattern);
    });
    this.unwatch = deps.onConfigChange((keys) => {
      // lru-cache cannot be resized in place: new limits start an empty L1 that keeps the counters.
      if (keys.some((k) => L1_KEYS.includes(k))) {
        const previous = this.memory;
        this.memory = this.createL1(previous.statsSync());
        this.generation += 1;
        void previous.close();
      }
    });
  }

  async start(): Promise<void> {
    if (this.redis) return;
    const { url, key_prefix } = this.deps.cfg().redis;
    this.redis = this.deps.connectL2
      ? this.deps.connectL2()
      : url
        ? (await import('./redis/redis-cache-level.js')).RedisCacheLevel.connect(url, key_prefix)
        : undefined;
    await this.redis?.ping();
  }

  async stop(): Promise<void> {
    const l2 = this.redis;
    this.redis = undefined;
    await l2?.close();
  }

  /** Platform shutdown: stop listening for invalidations (the service itself is stopped by the registry). */
  async close(): Promise<void> {
    this.unsubscribe();
    this.unwatch();
    await this.stop();
    await this.memory.close();
  }

  l1(): MemoryCacheLevel {
    return this.memory;
  }

  countLookup(hit: boolean): void {
    if (hit) this.hits += 1;
    else this.misses += 1;
  }

  /** The namespaced API (`plugin_cache:<id>` for a plugin). `user_sessions` stays in L1 only. */
  namespace(name: string): CacheNamespace {
    if (!isNamespaceName(name)) throw new Error(`unknown cache namespace '${name}'`);
    const prefix = `${name}:`;
    const useL2 = name !== 'user_sessions';
    const ttlMs = (ttlSeconds: number | undefined) =>
      (ttlSeconds ?? this.deps.cfg().cache.default_ttl_seconds) * 1000;
    const ns: CacheNamespace = {
      name,
      get: async <T>(key: string) => {
        const raw = await this.lookup(prefix + key, useL2);
        return raw === undefined ? undefined : (JSON.parse(raw) as T);
      },
      set: async (key, value, ttlSeconds) => {
        const json = JSON.stringify(value);
        if (json === undefined) throw new TypeError('cache values must be JSON-serializable');
        await this.store(prefix + key, json, ttlMs(ttlSeconds), useL2);
      },
      delete: async (key) => {
        const full = prefix + key;
        let removed = this.memory.deleteSync(full);
        if (useL2 && this.redis) removed = (await this.redis.delete(full)) || removed;
        await this.announce(escapeGlob(full));
        return removed;
      },
      clear: async (pattern = '*') =>
        (await this.clear(escapeGlob(prefix) + pattern, useL2 ? 'all' : 'L1')).cleared_keys,
      getOrCompute: async <T>(key: string, compute: () => Promise<T>, ttlSeconds?: number) => {
        const cached = await ns.get<T>(key);
        if (cached !== undefined) return cached;
        const generation = this.generation;
        const value = await compute();
        if (generation === this.generation) await ns.set(key, value, ttlSeconds);
        return value;
      },
    };
    return ns;
  }

  /** A synchronous L1-only view, for per-request lookups (auth, the event list's pages). */
  local<V>(namespace: 'user_sessions' | 'api_responses', kind: string, ttlMs: number): LocalCache<V> {
    return new LocalCache<V>(this, `${namespace}:${kind}:`, ttlMs);
  }

  /** Clears keys matching a glob (full keys, `<namespace>:<key>`) on the chosen levels of every instance. */
  async clear(
    pattern: string,
    level: ClearLevel,
  ): Promise<{ cleared_keys: number; levels: ('L1' | 'L2')[] }> {
    const levels: ('L1' | 'L2')[] = [];
    let cleared = 0;
    if (level !== 'L2') {
      cleared += this.memory.clearSync(pattern);
      this.generation += 1;
      levels.push('L1');
      await this.announce(pattern);
    }
    if (level !== 'L1' && this.redis) {
      try {
        cleared += await this.redis.clear(pattern);
      } catch {
        throw new AppError('SERVICE_UNAVAILABLE', 'The L2 cache (Redis) did not answer; retry shortly', {
          details: { level: 'L2' },
        });
      }
      levels.push('L2');
    }
    return { cleared_keys: cleared, levels };
  }

  async status(): Promise<CacheStatus> {
    const health = await this.health();
    const levels: CacheLevelReport[] = [report(this.memory, this.memory.statsSync())];
    if (this.redis) {
      try {
        const stats = withDeadline(this.redis.stats(), L2_PING_TIMEOUT_MS, 'the Redis cache level');
        levels.push(report(this.redis, await stats));
      } catch {
        // Unreachable or not answering L2: reported by health; its figures are unknown, so it is left out rather
        // than zeroed.
      }
    }
    return {
      status: health.status,
      l1MaxBytes: this.memory.maxBytes,
      hits: this.hits,
      misses: this.misses,
      evictions: levels.reduce((sum, l) => sum + l.evictions, 0),
      levels,
    };
  }

  async health(): Promise<ServiceHealth> {
    const l1 = this.memory.statsSync();
    const checks: ServiceHealth['checks'] = [
      {
        name: 'l1_memory',
        status: 'pass',
        current_mb: round(l1.bytes / MIB, 3),
        limit_mb: round(this.memory.maxBytes / MIB, 3),
      },
    ];
    let status: ServiceHealth['status'] = 'healthy';
    if (this.redis) {
      try {
        checks.push({
          name: 'l2_connectivity',
          status: 'pass',
          // Connected but not answering is a warning now, not a health check (and /status) held as long.
          response_time_ms: round(
            await withDeadline(this.redis.ping(), L2_PING_TIMEOUT_MS, 'the Redis cache level'),
          ),
        });
      } catch (err) {
        // The platform still serves (from L1 and the source of truth), only slower.
        status = 'warning';
        checks.push({ name: 'l2_connectivity', status: 'warning', error: (err as Error).message });
      }
    }
    return {
      status,
      checks,
      details: {
        hit_rate: this.hitRate(),
        memory_usage: `${round(l1.bytes / MIB, 2)} MB`,
        levels: this.redis ? 2 : 1,
      },
    };
  }

  metrics(): Record<string, number> {
    const l1 = this.memory.statsSync();
    return {
      hits: this.hits,
      misses: this.misses,
      hit_rate: this.hitRate(),
      evictions: l1.evictions,
      l1_entries: l1.entries,
      l1_memory_mb: round(l1.bytes / MIB, 3),
    };
  }

  settings(): Record<string, unknown> {
    const c = this.deps.cfg().cache;
    return {
      levels: this.redis ? ['L1', 'L2'] : ['L1'],
      l1_max_entries: c.l1_max_entries,
      l1_max_mb: c.l1_max_mb,
      default_ttl_seconds: c.default_ttl_seconds,
    };
  }

  private hitRate(): number {
    const total = this.hits + this.misses;
    return total === 0 ? 0 : round(this.hits / total, 4);
  }

  private async lookup(key: string, useL2: boolean): Promise<string | undefined> {
    const local = this.memory.getSync(key);
    if (local !== undefined) {
      this.countLookup(true);
      return local;
    }
    if (useL2 && this.redis) {
      const shared = await this.redis.get(key);
      if (shared !== undefined) {
        const cut = shared.indexOf(':');
        const remaining = Number(shared.slice(0, cut)) - Date.now();
        if (remaining > 0) {
          const json = shared.slice(cut + 1);
          this.memory.setSync(key, json, remaining);
          this.countLookup(true);
          return json;
        }
      }
    }
    this.countLookup(false);
    return undefined;
  }

  private async store(key: string, json: string, ttlMs: number, useL2: boolean): Promise<void> {
    this.memory.setSync(key, json, ttlMs);
    if (!useL2 || !this.redis) return;
    // L2 keeps the absolute expiry with the value, so a copy pulled into L1 expires when the original does.
    await this.redis.set(key, `${Date.now() + ttlMs}:${json}`, ttlMs);
    await this.announce(escapeGlob(key));
  }

  /** Other instances drop their L1 copies; only needed when there are other instances (Redis shared state). */
  private async announce(pattern: string): Promise<void> {
    if (this.deps.shared.kind !== 'redis') return;
    await this.deps.shared.publish(INVALIDATE_CHANNEL, {
      origin: this.instance,
      pattern,
    } satisfies Invalidation);
  }

  private createL1(counters?: LevelStats): MemoryCacheLevel {
    const c = this.deps.cfg().cache;
    return new MemoryCacheLevel({
      maxEntries: c.l1_max_entries,
      maxBytes: c.l1_max_mb * MIB,
      defaultTtlMs: c.default_ttl_seconds * 1000,
      ...(counters ? { counters } : {}),
    });
  }
}

function report(level: CacheLevel, stats: LevelStats): CacheLevelReport {
  const total = stats.hits + stats.misses;
  return {
    level: level.level,
    type: level.type,
    ...stats,
    hit_rate: total === 0 ? 0 : round(stats.hits / total, 4),
    miss_rate: total === 0 ? 0 : round(stats.misses / total, 4),
  };
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
