import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { fixedWindowEnd, gcra, type HeldLease, lockFromLease, type SharedState } from '../shared-state.js';

export function createMemorySharedState(): SharedState {
  const counters = new Map<string, { count: number; resetAt: number }>();
  const locks = new Map<string, { token: string; until: number }>();
  const tallies = new Map<string, { count: number; until: number }>();
  /** `pace` keys → when their next permit is due (epoch ms, fractional). */
  const paces = new Map<string, number>();
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  const tryLease = async (name: string, ttlMs: number): Promise<HeldLease | undefined> => {
    const now = Date.now();
    const held = locks.get(name);
    if (held && held.until > now) return undefined;
    const token = randomUUID();
    locks.set(name, { token, until: now + ttlMs });
    // Expired counts as lost even while no one else took it yet, as with a Redis key that timed out.
    const mine = () => {
      const entry = locks.get(name);
      return entry?.token === token && entry.until > Date.now() ? entry : undefined;
    };
    return {
      async renew() {
        const entry = mine();
        if (entry) entry.until = Date.now() + ttlMs;
        return entry !== undefined;
      },
      async release() {
        if (locks.get(name)?.token === token) locks.delete(name);
      },
    };
  };
  return {
    kind: 'memory',
    async hit(key, windowSeconds) {
      const now = Date.now();
      const resetAt = fixedWindowEnd(windowSeconds, now);
      // The window's length is part of the key: a day's window and a half-day's end together every midnight.
      const id = `${key}:${windowSeconds}:${resetAt}`;
      const current = counters.get(id) ?? { count: 0, resetAt };
      current.count += 1;
      counters.set(id, current);
      if (counters.size > 100_000) {
        for (const [k, v] of counters) if (v.resetAt <= now) counters.delete(k);
      }
      return { count: current.count, resetAt };
    },
    async peek(key, windowSeconds) {
      const resetAt = fixedWindowEnd(windowSeconds);
      return { count: counters.get(`${key}:${windowSeconds}:${resetAt}`)?.count ?? 0, resetAt };
    },
    async increment(key, ttlSeconds) {
      const now = Date.now();
      const held = tallies.get(key);
      const count = (held && held.until > now ? held.count : 0) + 1;
      tallies.set(key, { count, until: now + ttlSeconds * 1000 });
      if (tallies.size > 100_000) {
        for (const [k, v] of tallies) if (v.until <= now) tallies.delete(k);
      }
      return count;
    },
    async resetCounter(key) {
      tallies.delete(key);
    },
    async pace(key, intervalMs, toleranceMs, want) {
      const now = performance.timeOrigin + performance.now();
      const step = gcra(paces.get(key) ?? now, now, intervalMs, toleranceMs, want);
      if (step.granted > 0) paces.set(key, step.tat);
      if (paces.size > 10_000) {
        // A due time in the past says no more than a missing one.
        for (const [k, due] of paces) if (due < now) paces.delete(k);
      }
      return { granted: step.granted, waitMs: step.waitMs };
    },
    async publish(channel, message) {
      // Same serialisation as Redis so both backends hand handlers the same shapes.
      const copy: unknown = JSON.parse(JSON.stringify(message));
      queueMicrotask(() => bus.emit(channel, copy));
    },
    subscribe(channel, handler) {
      bus.on(channel, handler);
      return () => bus.off(channel, handler);
    },
    async whenSubscribed() {},
    tryLock: lockFromLease(tryLease),
    tryLease,
    async ping() {
      return 0;
    },
    async close() {
      bus.removeAllListeners();
    },
  };
}
