import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { RedisLike, SharedState } from '../shared-state.js';

const HIT_SCRIPT = `
local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return c`;
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function createRedisSharedState(url: string, prefix: string): SharedState {
  const options = { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false };
  const command = new Redis(url, options) as unknown as RedisLike;
  const subscriber = new Redis(url, options) as unknown as RedisLike;
  // A lost connection is retried by ioredis; commands fail meanwhile and the callers report it.
  command.on('error', () => {});
  subscriber.on('error', () => {});
  const handlers = new Map<string, Set<(message: unknown) => void>>();
  subscriber.on('message', (channel, raw) => {
    const set = handlers.get(channel);
    if (!set) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return;
    }
    for (const h of set) h(parsed);
  });
  const key = (k: string) => prefix + k;
  const pending = new Map<string, Promise<unknown>>();
  return {
    kind: 'redis',
    async hit(name, windowSeconds) {
      const windowMs = windowSeconds * 1000;
      const resetAt = Math.floor(Date.now() / windowMs) * windowMs + windowMs;
      const count = Number(await command.eval(HIT_SCRIPT, 1, key(`rl:${name}:${resetAt}`), resetAt));
      return { count, resetAt };
    },
    async publish(channel, message) {
      await command.publish(key(channel), JSON.stringify(message));
    },
    subscribe(channel, handler) {
      const full = key(channel);
      let set = handlers.get(full);
      if (!set) {
        set = new Set();
        handlers.set(full, set);
        pending.set(
          full,
          subscriber
            .subscribe(full)
            .catch(() => {})
            .finally(() => pending.delete(full)),
        );
      }
      set.add(handler);
      return () => {
        set.delete(handler);
        if (set.size === 0) {
          handlers.delete(full);
          subscriber.unsubscribe(full).catch(() => {});
        }
      };
    },
    async whenSubscribed() {
      await Promise.all([...pending.values()]);
    },
    async tryLock(name, ttlMs) {
      const token = randomUUID();
      const ok = await command.set(key(`lock:${name}`), token, 'PX', ttlMs, 'NX');
      if (ok !== 'OK') return undefined;
      return async () => {
        await command.eval(RELEASE_SCRIPT, 1, key(`lock:${name}`), token);
      };
    },
    async ping() {
      const start = performance.now();
      await command.ping();
      return performance.now() - start;
    },
    async close() {
      handlers.clear();
      await Promise.allSettled([command.quit(), subscriber.quit()]);
    },
  };
}
