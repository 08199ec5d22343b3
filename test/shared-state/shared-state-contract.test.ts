import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { holdLease } from '../../src/cluster/held-lease.js';
import { createMemorySharedState } from '../../src/cluster/memory/memory-shared-state.js';
import { createRedisSharedState } from '../../src/cluster/redis/redis-shared-state.js';
import type { SharedState } from '../../src/cluster/shared-state.js';
import { backend, REDIS_URL } from '../helpers/backends.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The lock contract every SharedState backend keeps: memory on the embedded project, Redis on the cluster
 * project (two clients on one prefix stand for two instances). Leases are short so expiry is seen for real.
 */
describe(`shared state locks (${backend === 'cluster' ? 'redis' : 'memory'})`, () => {
  const opened: SharedState[] = [];
  const prefix = `test:locks:${randomBytes(4).toString('hex')}:`;
  const memory = createMemorySharedState();
  /** Two holders of the same state: one backend seen by two instances. */
  const pair = (): [SharedState, SharedState] => {
    if (backend !== 'cluster') return [memory, memory];
    const a = createRedisSharedState(REDIS_URL, prefix);
    const b = createRedisSharedState(REDIS_URL, prefix);
    opened.push(a, b);
    return [a, b];
  };
  afterAll(async () => {
    await Promise.all([...opened, memory].map((s) => s.close()));
  });

  it('keeps a renewed lease past several ttls, and frees it on release', async () => {
    const [a, b] = pair();
    const lease = await a.tryLease('renewed', 200);
    expect(lease).toBeDefined();
    for (let i = 0; i < 8; i++) {
      await sleep(70);
      expect(await lease!.renew()).toBe(true);
      expect(await b.tryLease('renewed', 200)).toBeUndefined();
      expect(await b.tryLock('renewed', 200)).toBeUndefined();
    }
    await lease!.release();
    const next = await b.tryLease('renewed', 200);
    expect(next).toBeDefined();
    await next!.release();
  });

  it('loses a lease its holder stops renewing once the ttl passes; a late renew or release changes nothing', async () => {
    const [a, b] = pair();
    const stale = await a.tryLease('abandoned', 150);
    expect(stale).toBeDefined();
    expect(await b.tryLease('abandoned', 150)).toBeUndefined();
    await sleep(250);
    const taken = await b.tryLease('abandoned', 10_000);
    expect(taken).toBeDefined();
    expect(await stale!.renew()).toBe(false);
    await stale!.release();
    expect(await a.tryLease('abandoned', 150)).toBeUndefined();
    await taken!.release();
  });

  it('answers false to the renewal of a lease that expired even while nobody took it', async () => {
    const [a] = pair();
    const lease = await a.tryLease('expired', 100);
    await sleep(180);
    expect(await lease!.renew()).toBe(false);
  });

  it('holds a lease with holdLease for as long as the work runs, renewing it on its own', async () => {
    const [a, b] = pair();
    const problems: string[] = [];
    const release = await holdLease(a, 'held', 150, {
      lost: () => problems.push('lost'),
      renewalFailed: (err) => problems.push(String(err)),
    });
    expect(release).toBeDefined();
    expect(await holdLease(b, 'held', 150, { lost: () => {}, renewalFailed: () => {} })).toBeUndefined();
    await sleep(600);
    expect(await b.tryLease('held', 150)).toBeUndefined();
    await release!();
    const after = await b.tryLease('held', 150);
    expect(after).toBeDefined();
    await after!.release();
    expect(problems).toEqual([]);
  });
});

/** The counter contract (`increment`, `resetCounter`, and `hit` read by `peek`): one count for every instance, kept while it is in use. */
describe(`shared state counters (${backend === 'cluster' ? 'redis' : 'memory'})`, () => {
  const opened: SharedState[] = [];
  const prefix = `test:counters:${randomBytes(4).toString('hex')}:`;
  const memory = createMemorySharedState();
  const pair = (): [SharedState, SharedState] => {
    if (backend !== 'cluster') return [memory, memory];
    const a = createRedisSharedState(REDIS_URL, prefix);
    const b = createRedisSharedState(REDIS_URL, prefix);
    opened.push(a, b);
    return [a, b];
  };
  afterAll(async () => {
    await Promise.all([...opened, memory].map((s) => s.close()));
  });

  it('counts the increments of two holders together, and starts again from zero after a reset', async () => {
    const [a, b] = pair();
    expect(await a.increment('shared', 60)).toBe(1);
    expect(await b.increment('shared', 60)).toBe(2);
    expect(await a.increment('shared', 60)).toBe(3);
    await b.resetCounter('shared');
    expect(await a.increment('shared', 60)).toBe(1);
  });

  it("reads a fixed window's count with peek without adding to it, for every holder", async () => {
    const [a, b] = pair();
    // `hit` and `peek` fail at once while a client still connects (they are on a request's path).
    await Promise.all([a.ping(), b.ping()]);
    const DAY = 86_400;
    // Nothing counted yet: 0, with the window's end all the same.
    const empty = await b.peek('window', DAY);
    expect(empty.count).toBe(0);
    const first = await a.hit('window', DAY);
    expect(first.count).toBe(1);
    expect(empty.resetAt).toBe(first.resetAt);
    expect(await a.hit('window', DAY)).toEqual({ count: 2, resetAt: first.resetAt });
    for (let i = 0; i < 3; i++)
      expect(await b.peek('window', DAY)).toEqual({ count: 2, resetAt: first.resetAt });
    expect(await b.hit('window', DAY)).toEqual({ count: 3, resetAt: first.resetAt });
    // Another window length is another counter.
    expect((await a.peek('window', DAY / 2)).count).toBe(0);
  });

  it('keeps a counter in use past its ttl, and forgets it once idle for the ttl', async () => {
    const [a, b] = pair();
    for (let i = 1; i <= 4; i++) {
      expect(await (i % 2 ? a : b).increment('idle', 0.3)).toBe(i);
      await sleep(120);
    }
    await sleep(450);
    expect(await a.increment('idle', 0.3)).toBe(1);
  });
});
