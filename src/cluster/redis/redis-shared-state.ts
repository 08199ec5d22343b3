import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { withDeadline } from '../../kernel/with-deadline.js';
import {
  fixedWindowEnd,
  type HeldLease,
  lockFromLease,
  type RedisLike,
  type SharedState,
} from '../shared-state.js';

const HIT_SCRIPT = `
local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return c`;
const PEEK_SCRIPT = `return redis.call('GET', KEYS[1])`;
const INCREMENT_SCRIPT = `
local c = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return c`;
const RESET_SCRIPT = `return redis.call('DEL', KEYS[1])`;
// GCRA (see `gcra` in shared-state.ts) on Redis's clock, so instances whose clocks differ pace alike. The due time
// is kept only while it is in the future: a missing key is a pace with nothing due. Fractions travel as text.
const PACE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local granted = 0
while granted < want and tat - tolerance <= now do
  tat = tat + interval
  granted = granted + 1
end
if granted > 0 then
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
end
return {granted, string.format('%.3f', math.max(0, tat - tolerance - now))}`;
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const RENEW_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

const unavailable = () => Object.assign(new Error('Redis is not connected'), { code: 'ECONNREFUSED' });
/**
 * How long a rate-limit hit waits for Redis. Connected but not answering (paused, overloaded, a network
 * stall) fails the hit after this, so the caller counts on its own instead of holding every request.
 */
export const HIT_TIMEOUT_MS = 500;
/** After a hit timed out, later hits count locally at once until it is answered, or for this long at most. */
const STALL_RETRY_MS = 5000;
/** How long taking a lock waits for Redis before the caller is told it is unavailable (503, never a hang). */
export const LOCK_TIMEOUT_MS = 2000;
export function createRedisSharedState(url: string, prefix: string): SharedState {
  const options = { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false };
  const command = new Redis(url, options) as unknown as RedisLike;
  // Channels are (re)subscribed from `handlers` each time the connection is ready, never before: a SUBSCRIBE
  // sent while ioredis still connects puts the connection in subscriber mode ahead of its ready check (INFO),
  // which then fails and drops the subscription; and one sent while Redis is down is never retried.
  const subscriber = new Redis(url, { ...options, autoResubscribe: false }) as unknown as RedisLike;
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
  // A hit that timed out and has not been answered yet: Redis answers a connection's commands in order, so
  // until it is, later hits would wait behind it; they fail at once instead.
  let stalled: Promise<unknown> | undefined;
  const pending = new Set<Promise<unknown>>();
  const subscribeNow = (channels: string[]) => {
    if (channels.length === 0 || subscriber.status !== 'ready') return;
    // A failure (the connection dropped meanwhile) is retried by the next 'ready'.
    const p = subscriber
      .subscribe(...channels)
      .catch(() => {})
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  subscriber.on('ready', () => subscribeNow([...handlers.keys()]));
  const tryLease = async (name: string, ttlMs: number): Promise<HeldLease | undefined> => {
    const token = randomUUID();
    const lockKey = key(`lock:${name}`);
    // A lock that Redis grants only after the caller gave up is freed as soon as it is granted.
    const ok = await withDeadline(
      command.set(lockKey, token, 'PX', ttlMs, 'NX'),
      LOCK_TIMEOUT_MS,
      'Redis',
      (late) => {
        late
          .then((granted) => (granted === 'OK' ? command.eval(RELEASE_SCRIPT, 1, lockKey, token) : undefined))
          .catch(() => {});
      },
    );
    if (ok !== 'OK') return undefined;
    // Both scripts act only while the key still holds this token: never on a lock another holder took.
    return {
      async renew() {
        return Number(await command.eval(RENEW_SCRIPT, 1, lockKey, token, ttlMs)) === 1;
      },
      async release() {
        await command.eval(RELEASE_SCRIPT, 1, lockKey, token);
      },
    };
  };
  return {
    kind: 'redis',
    async hit(name, windowSeconds) {
      // Every request counts a hit: while Redis is away, fail at once instead of queueing for its return.
      if (command.status !== 'ready') throw unavailable();
      if (stalled)
        throw Object.assign(new Error('Redis has not answered an earlier count yet'), { code: 'ETIMEDOUT' });
      const resetAt = fixedWindowEnd(windowSeconds);
      // The window's length is part of the key: a day's window and a half-day's end together every midnight.
      const answer = command.eval(HIT_SCRIPT, 1, key(`rl:${name}:${windowSeconds}:${resetAt}`), resetAt);
      const count = Number(
        await withDeadline(answer, HIT_TIMEOUT_MS, 'Redis', (late) => {
          const waiting: Promise<unknown> = late
            .catch(() => {})
            .finally(() => {
              if (stalled === waiting) stalled = undefined;
            });
          stalled = waiting;
          // A command that is never answered (a half-open connection) must not keep counting local for good.
          setTimeout(() => {
            if (stalled === waiting) stalled = undefined;
          }, STALL_RETRY_MS).unref();
        }),
      );
      return { count, resetAt };
    },
    // On a request's path like `hit`: while Redis is away or stalled, fail at once (the caller reads its own).
    async peek(name, windowSeconds) {
      if (command.status !== 'ready' || stalled) throw unavailable();
      const resetAt = fixedWindowEnd(windowSeconds);
      const answer = command.eval(PEEK_SCRIPT, 1, key(`rl:${name}:${windowSeconds}:${resetAt}`));
      return { count: Number((await withDeadline(answer, HIT_TIMEOUT_MS, 'Redis')) ?? 0), resetAt };
    },
    // Counters are not on a request's path (a plugin's failures): queued while ioredis connects, bounded in time.
    async increment(name, ttlSeconds) {
      const answer = command.eval(INCREMENT_SCRIPT, 1, key(`count:${name}`), Math.ceil(ttlSeconds * 1000));
      return Number(await withDeadline(answer, LOCK_TIMEOUT_MS, 'Redis'));
    },
    async resetCounter(name) {
      await withDeadline(command.eval(RESET_SCRIPT, 1, key(`count:${name}`)), LOCK_TIMEOUT_MS, 'Redis');
    },
    // On the path of a paced delivery: while Redis is away, fail at once (the caller waits and asks again).
    async pace(name, intervalMs, toleranceMs, want) {
      if (command.status !== 'ready') throw unavailable();
      const answer = command.eval(PACE_SCRIPT, 1, key(`pace:${name}`), intervalMs, toleranceMs, want);
      const [granted, waitMs] = (await withDeadline(answer, LOCK_TIMEOUT_MS, 'Redis')) as [number, string];
      return { granted: Number(granted), waitMs: Number(waitMs) };
    },
    async publish(channel, message) {
      // Queued while ioredis reconnects (up to maxRetriesPerRequest attempts): a revocation or a config change
      // announced during a blip still reaches the others. The event bus does not wait for its publishes.
      await command.publish(key(channel), JSON.stringify(message));
    },
    subscribe(channel, handler) {
      const full = key(channel);
      let set = handlers.get(full);
      if (!set) {
        set = new Set();
        handlers.set(full, set);
        subscribeNow([full]);
      }
      set.add(handler);
      return () => {
        set.delete(handler);
        if (set.size === 0) {
          handlers.delete(full);
          if (subscriber.status === 'ready') subscriber.unsubscribe(full).catch(() => {});
        }
      };
    },
    async whenSubscribed() {
      if (subscriber.status !== 'ready') {
        // Bounded: if Redis is slow to answer at start, the 'ready' handler subscribes once it does.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000);
          subscriber.once('ready', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      await Promise.all([...pending]);
    },
    tryLock: lockFromLease(tryLease),
    tryLease,
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
