import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisSharedState } from '../../src/cluster/redis/redis-shared-state.js';
import type { SharedState } from '../../src/cluster/shared-state.js';
import { REDIS_URL } from '../helpers/backends.js';

/**
 * Instances subscribe to their channels while the Redis connection is still opening. ioredis would send those
 * SUBSCRIBEs ahead of its ready check, which then fails and silently drops them — an instance deaf to
 * maintenance, logouts or config changes of the others. Ten connections at once make the race likely.
 */
describe('Redis shared state subscriptions', () => {
  const check = new Redis(REDIS_URL);
  const opened: SharedState[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()));
    check.disconnect();
  });

  it('has every channel subscribed once whenSubscribed resolves, even when subscribed during connect', async () => {
    const run = randomBytes(4).toString('hex');
    const counts = await Promise.all(
      Array.from({ length: 10 }, async (_, n) => {
        const prefix = `test:subs:${run}:${n}:`;
        const shared = createRedisSharedState(REDIS_URL, prefix);
        opened.push(shared);
        shared.subscribe('first', () => {});
        shared.subscribe('second', () => {});
        await new Promise((r) => setTimeout(r, 5));
        shared.subscribe('third', () => {});
        await shared.whenSubscribed();
        const reply = (await check.call(
          'pubsub',
          'numsub',
          ...['first', 'second', 'third'].map((c) => prefix + c),
        )) as (string | number)[];
        return reply.filter((_, i) => i % 2 === 1).map(Number);
      }),
    );
    expect(counts).toEqual(Array.from({ length: 10 }, () => [1, 1, 1]));
  });

  it('delivers a published message to a handler subscribed during connect', async () => {
    const prefix = `test:subs:${randomBytes(4).toString('hex')}:`;
    const a = createRedisSharedState(REDIS_URL, prefix);
    const b = createRedisSharedState(REDIS_URL, prefix);
    opened.push(a, b);
    const heard: unknown[] = [];
    b.subscribe('hello', (m) => heard.push(m));
    await b.whenSubscribed();
    await a.publish('hello', { n: 1 });
    const deadline = performance.now() + 5000;
    while (heard.length === 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual([{ n: 1 }]);
  });
});
