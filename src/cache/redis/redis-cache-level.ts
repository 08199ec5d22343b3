import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { CacheLevel, LevelStats } from '../cache-level.js';
import { escapeGlob } from '../glob-pattern.js';

/** The slice of ioredis the L2 cache uses, so the cache does not depend on the driver's types. */
export interface RedisCacheClient {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, px: 'PX', ttlMs: number): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  scan(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]]>;
  memory(sub: 'USAGE', key: string): Promise<number | null>;
  info(section: string): Promise<string>;
  ping(): Promise<string>;
  quit(): Promise<string>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

const SCAN_BATCH = 500;
const STATS_TTL_MS = 2000;

/**
 * L2: Redis, shared by every instance. Keys live under `<redis.key_prefix>cache:`. A lookup that fails
 * (Redis unreachable) counts as a miss and an error rather than failing the request that wanted the value.
 */
export class RedisCacheLevel implements CacheLevel {
  readonly level = 'L2' as const;
  readonly type = 'redis' as const;
  private hits = 0;
  private misses = 0;
  private errors = 0;
  private statsMemo: { at: number; stats: Promise<LevelStats> } | undefined;

  constructor(
    private readonly client: RedisCacheClient,
    private readonly prefix: string,
  ) {}

  static connect(url: string, keyPrefix: string): RedisCacheLevel {
    const client = new Redis(url, {
      maxRetriesPerRequest: 2,
      enableOfflineQueue: true,
    }) as unknown as RedisCacheClient;
    // A lost connection is retried by ioredis; commands fail meanwhile and count as errors.
    client.on('error', () => {});
    return new RedisCacheLevel(client, `${keyPrefix}cache:`);
  }

  get errorCount(): number {
    return this.errors;
  }

  async get(key: string): Promise<string | undefined> {
    try {
      const value = await this.client.get(this.prefix + key);
      if (value === null) this.misses += 1;
      else this.hits += 1;
      return value ?? undefined;
    } catch {
      this.errors += 1;
      this.misses += 1;
      return undefined;
    }
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.statsMemo = undefined;
    try {
      await this.client.set(this.prefix + key, value, 'PX', Math.max(1, Math.round(ttlMs)));
    } catch {
      this.errors += 1;
    }
  }

  async delete(key: string): Promise<boolean> {
    this.statsMemo = undefined;
    return (await this.client.del(this.prefix + key)) > 0;
  }

  async clear(pattern: string): Promise<number> {
    let removed = 0;
    for await (const keys of this.scan(pattern)) {
      if (keys.length > 0) removed += await this.client.del(...keys);
    }
    this.statsMemo = undefined;
    return removed;
  }

  /** Counts and sizes this cache's keys in Redis (`MEMORY USAGE`); remembered for two seconds unless written. */
  stats(): Promise<LevelStats> {
    const now = Date.now();
    if (!this.statsMemo || now - this.statsMemo.at > STATS_TTL_MS) {
      this.statsMemo = { at: now, stats: this.measure() };
      this.statsMemo.stats.catch(() => {
        this.statsMemo = undefined;
      });
    }
    return this.statsMemo.stats;
  }

  async ping(): Promise<number> {
    const start = performance.now();
    await this.client.ping();
    return performance.now() - start;
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => {});
  }

  private async measure(): Promise<LevelStats> {
    let entries = 0;
    let bytes = 0;
    for await (const keys of this.scan('*')) {
      entries += keys.length;
      const sizes = await Promise.all(keys.map((k) => this.client.memory('USAGE', k)));
      for (const s of sizes) bytes += s ?? 0;
    }
    // Redis evicts under its own maxmemory policy; the server-wide count is the only figure it keeps.
    const info = await this.client.info('stats');
    const evicted = /^evicted_keys:(\d+)/m.exec(info);
    return { hits: this.hits, misses: this.misses, evictions: Number(evicted?.[1] ?? 0), entries, bytes };
  }

  private async *scan(pattern: string): AsyncGenerator<string[]> {
    const match = escapeGlob(this.prefix) + pattern;
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', match, 'COUNT', SCAN_BATCH);
      cursor = next;
      yield keys;
    } while (cursor !== '0');
  }
}
