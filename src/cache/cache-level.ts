/** Figures one cache level measures about itself. */
export interface LevelStats {
  hits: number;
  misses: number;
  evictions: number;
  entries: number;
  bytes: number;
}

/**
 * One level of the cache: L1 in process memory, L2 in Redis. Values are serialized strings, so every level
 * holds the same bytes and a hit never hands out an object another caller can mutate.
 */
export interface CacheLevel {
  readonly level: 'L1' | 'L2';
  readonly type: 'memory' | 'redis';
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  delete(key: string): Promise<boolean>;
  /** Removes every key the glob matches; resolves to how many were removed. */
  clear(pattern: string): Promise<number>;
  stats(): Promise<LevelStats>;
  ping(): Promise<number>;
  close(): Promise<void>;
}
