/**
 * State shared by every instance: fixed-window counters, pub/sub and short locks.
 * Embedded mode keeps it in memory; cluster mode keeps it in Redis so limits, revocations and
 * announcements hold across instances.
 */
export interface SharedState {
  readonly kind: 'memory' | 'redis';
  /** Adds one to the counter of the current fixed window; returns the new count and when the window ends. */
  hit(key: string, windowSeconds: number): Promise<{ count: number; resetAt: number }>;
  /** The count `hit` has reached in the current fixed window, without adding one (0 when none). */
  peek(key: string, windowSeconds: number): Promise<{ count: number; resetAt: number }>;
  /**
   * Adds one to a counter that is kept `ttlSeconds` after its last increment (no fixed window: it only
   * restarts once idle that long); returns the new count.
   */
  increment(key: string, ttlSeconds: number): Promise<number>;
  /** Starts an `increment` counter again from zero. */
  resetCounter(key: string): Promise<void>;
  /**
   * Paces something across every instance (GCRA, the generic cell rate algorithm): takes up to `want` permits
   * of a pace of one per `intervalMs`, each granted no more than `toleranceMs` ahead of its turn (0: strictly
   * one per interval). Answers how many were granted and in how many milliseconds the next one is due.
   */
  pace(key: string, intervalMs: number, toleranceMs: number, want: number): Promise<Paced>;
  publish(channel: string, message: unknown): Promise<void>;
  /** Returns an unsubscribe function. Handlers receive the parsed message. */
  subscribe(channel: string, handler: (message: unknown) => void): () => void;
  /** Resolves once every subscription made so far is live (a new instance waits for it before serving). */
  whenSubscribed(): Promise<void>;
  /** Takes a lock if free; returns a release function, or undefined when another holder has it. */
  tryLock(name: string, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
  /**
   * Takes a lock if free, as a lease its holder renews: a holder that dies (or stops renewing) loses it
   * `ttlMs` after the last renewal, instead of blocking the others for a ttl sized for the longest task.
   */
  tryLease(name: string, ttlMs: number): Promise<HeldLease | undefined>;
  ping(): Promise<number>;
  close(): Promise<void>;
}

/** When the fixed window of `windowSeconds` that holds `now` ends, in epoch milliseconds (`hit`, `peek`). */
export function fixedWindowEnd(windowSeconds: number, now = Date.now()): number {
  const windowMs = windowSeconds * 1000;
  return Math.floor(now / windowMs) * windowMs + windowMs;
}

/** What `SharedState.pace` answers. */
export interface Paced {
  granted: number;
  /** Until the next permit is due (0 when one could be taken at once). */
  waitMs: number;
}

/**
 * One `pace` step on a theoretical arrival time (`tat`, when the next permit is due): grants permits while
 * they are due within `toleranceMs` of `now`, up to `want`. The Redis script does the same in Lua.
 */
export function gcra(
  tat: number,
  now: number,
  intervalMs: number,
  toleranceMs: number,
  want: number,
): { tat: number; granted: number; waitMs: number } {
  let next = Math.max(tat, now);
  let granted = 0;
  while (granted < want && next - toleranceMs <= now) {
    next += intervalMs;
    granted += 1;
  }
  return { tat: next, granted, waitMs: Math.max(0, next - toleranceMs - now) };
}

/** `tryLock` in terms of `tryLease`: a lease nobody renews, released by the returned function. */
export function lockFromLease(tryLease: SharedState['tryLease']): SharedState['tryLock'] {
  return async (name, ttlMs) => {
    const lease = await tryLease(name, ttlMs);
    return lease && (() => lease.release());
  };
}

/** A lock taken with `tryLease`. */
export interface HeldLease {
  /** Extends the lease by its ttl from now; false when it had already expired (another holder may have it). */
  renew(): Promise<boolean>;
  /** Frees the lock, unless it already expired and another holder took it. */
  release(): Promise<void>;
}

/** The slice of ioredis the platform uses, so the core does not depend on the driver's types. */
export interface RedisLike {
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<number>;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  set(key: string, value: string, px: 'PX', ttl: number, nx: 'NX'): Promise<string | null>;
  ping(): Promise<string>;
  quit(): Promise<string>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  once(event: 'ready', listener: () => void): unknown;
  /** ioredis's connection state; `ready` once connected and checked. */
  readonly status: string;
}
