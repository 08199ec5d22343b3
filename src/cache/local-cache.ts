import { LRUCache } from 'lru-cache';
import { deepFreeze } from '../kernel/deep-freeze.js';
import { MemoryCacheLevel } from './memory/memory-cache-level.js';

/** What a LocalCache needs from the cache service: the current L1 and the lookup accounting. */
export interface LocalCacheHost {
  l1(): MemoryCacheLevel;
  countLookup(hit: boolean): void;
}

/**
 * A synchronous, L1-only view of one namespace, for lookups on every request (sessions, users, API keys)
 * where even one await on Redis would cost more than the database row it saves. Its entries count in the
 * cache statistics and are cleared with their namespace on every instance.
 */
export class LocalCache<V> {
  /** A view over a private L1 of its own, for tools that run without the cache service (CLI commands). */
  static standalone<V>(prefix: string, ttlMs: number, maxEntries = 10_000): LocalCache<V> {
    const l1 = new MemoryCacheLevel({ maxEntries, maxBytes: 64 * 1024 * 1024, defaultTtlMs: ttlMs });
    return new LocalCache<V>({ l1: () => l1, countLookup: () => {} }, `${prefix}:`, ttlMs);
  }

  // The value last parsed from each entry's JSON, reused while the entry holds that same JSON: the L1 keeps
  // JSON (its size accounting, and the same form as Redis), and parsing it on every request cost more than
  // the lookup. Values are frozen, so no caller can change what the next one reads.
  private readonly parsed = new LRUCache<string, { raw: string; value: V }>({ max: 10_000 });

  constructor(
    private readonly host: LocalCacheHost,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  get(key: string): V | undefined {
    const raw = this.host.l1().getSync(this.prefix + key);
    this.host.countLookup(raw !== undefined);
    if (raw === undefined) return undefined;
    const memo = this.parsed.get(key);
    if (memo !== undefined && memo.raw === raw) return memo.value;
    const value = deepFreeze(JSON.parse(raw) as V);
    this.parsed.set(key, { raw, value });
    return value;
  }

  set(key: string, value: V): void {
    this.host.l1().setSync(this.prefix + key, JSON.stringify(value), this.ttlMs);
  }

  delete(key: string): void {
    this.parsed.delete(key);
    this.host.l1().deleteSync(this.prefix + key);
  }

  deleteWhere(test: (value: V) => boolean): void {
    this.host.l1().deleteWhere(this.prefix, (raw) => test(JSON.parse(raw) as V));
  }

  clear(): void {
    this.parsed.clear();
    this.host.l1().deleteWhere(this.prefix, () => true);
  }
}
