import type { PlatformConfig } from '../config/config-schema.js';
import { createMemorySharedState } from './memory/memory-shared-state.js';
import type { SharedState } from './shared-state.js';

/**
 * `redis.url` chooses the backend: Redis in cluster mode, else in-process state. The Redis client is loaded
 * only when it is used, so an embedded instance never pays for it.
 */
export async function createSharedState(config: PlatformConfig): Promise<SharedState> {
  if (!config.redis.url) return createMemorySharedState();
  const { createRedisSharedState } = await import('./redis/redis-shared-state.js');
  return createRedisSharedState(config.redis.url, config.redis.key_prefix);
}
