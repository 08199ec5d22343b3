import { LRUCache } from 'lru-cache';
import type { CacheLevel, LevelStats } from '../cache-level.js';
import { globToRegExp } from '../glob-pattern.js';

/**
 * L1: an in-process LRU bounded by entry count and by bytes (key + serialized value, UTF-8).
 * The synchronous methods serve per-request lookups (auth) that must not wait on the event loop.
 */
export class MemoryCacheLevel implements CacheLevel {
  readonly level = 'L1' as const;
  readonly type = 'memory' as const;
  readonly maxBytes: number;
  private readonly lru: LRUCache<string, string>;
  private hits = 0;
  private misses = 0;
  private evictions = 0;

  constructor(options: {
    maxEntries: number;
    maxBytes: number;
    defaultTtlMs: number;
    /** Counters carried over from the L1 this one replaces (new limits), so statistics stay cumulative. */
    counters?: Pick<LevelStats, 'hits' | 'misses' | 'evictions'>;
  }) {
    this.maxBytes = options.maxBytes;
    this.hits = options.counters?.hits ?? 0;
    this.misses = options.counters?.misses ?? 0;
    this.evictions = options.counters?.evictions ?? 0;
    this.lru = new LRUCache<string, string>({
      max: options.maxEntries,
      maxSize: options.maxBytes,
      sizeCalculation: (value, key) => Buffer.byteLength(value) + Buffer.byteLength(key),
      ttl: options.defaultTtlMs,
      dispose: (_value, _key, reason) => {
        if (reason === 'evict') this.evictions += 1;
      },
    });
  }

  getSync(key: string): string | undefined {
    const value = this.lru.get(key);
    if (value === undefined) this.misses += 1;
    else this.hits += 1;
    return value;
  }

  /** Milliseconds the entry has left, for copying it into another level with the same expiry. */
  remainingTtlMs(key: string): number {
    return this.lru.getRemainingTTL(key);
  }

  setSync(key: string, value: string, ttlMs: number): void {
    this.lru.set(key, value, { ttl: ttlMs });
  }

  deleteSync(key: string): boolean {
    return this.lru.delete(key);
  }

  /** Removes the entries under `prefix` whose value passes the test (used to drop a user's cached rows). */
  deleteWhere(prefix: string, test: (value: string) => boolean): number {
    let removed = 0;
    for (const [key, value] of this.lru.entries()) {
      if (key.startsWith(prefix) && test(value) && this.lru.delete(key)) removed += 1;
    }
    return removed;
  }

  clearSync(pattern: string): number {
    this.lru.purgeStale();
    if (pattern === '*') {
      const count = this.lru.size;
      this.lru.clear();
      return count;
    }
    const re = globToRegExp(pattern);
    let removed = 0;
    for (const key of [...this.lru.keys()]) if (re.test(key) && this.lru.delete(key)) removed += 1;
    return removed;
  }

  async get(key: string): Promise<string | undefined> {
    return this.getSync(key);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.setSync(key, value, ttlMs);
  }

  async delete(key: string): Promise<boolean> {
    return this.deleteSync(key);
  }

  async clear(pattern: string): Promise<number> {
    return this.clearSync(pattern);
  }

  /** The live keys, most recently used first (diagnostics). */
  keys(): string[] {
    this.lru.purgeStale();
    return [...this.lru.keys()];
  }

  statsSync(): LevelStats {
    this.lru.purgeStale();
    return {
      hits: this.hits,
      misses: this.misses,
      evictions: this.evictions,
      entries: this.lru.size,
      bytes: this.lru.calculatedSize,
    };
  }

  async stats(): Promise<LevelStats> {
    return this.statsSync();
  }

  async ping(): Promise<number> {
    return 0;
  }

  async close(): Promise<void> {
    this.lru.clear();
  }
}
