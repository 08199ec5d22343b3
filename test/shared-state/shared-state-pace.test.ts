import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemorySharedState } from '../../src/cluster/memory/memory-shared-state.js';
import { createRedisSharedState } from '../../src/cluster/redis/redis-shared-state.js';
import type { SharedState } from '../../src/cluster/shared-state.js';
import { backend, REDIS_URL } from '../helpers/backends.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The pace contract (`SharedState.pace`, GCRA) every backend keeps: memory on the embedded project, Redis on
 * the cluster project, where two clients on one prefix stand for two instances sharing one pace.
 */
describe(`shared state pace (${backend === 'cluster' ? 'redis' : 'memory'})`, () => {
  const opened: SharedState[] = [];
  const prefix = `test:pace:${randomBytes(4).toString('hex')}:`;
  const memory = createMemorySharedState();
  const pair = async (): Promise<[SharedState, SharedState]> => {
    if (backend !== 'cluster') return [memory, memory];
    const a = createRedisSharedState(REDIS_URL, prefix);
    const b = createRedisSharedState(REDIS_URL, prefix);
    opened.push(a, b);
    await Promise.all([a.ping(), b.ping()]);
    return [a, b];
  };
  afterAll(async () => {
    await Promise.all([...opened, memory].map((s) => s.close()));
  });

  it('grants one permit per interval to both holders together, and names the wait until the next', async () => {
    const [a, b] = await pair();
    expect(await a.pace('one', 300, 0, 4)).toEqual({ granted: 1, waitMs: expect.any(Number) });
    const refused = await b.pace('one', 300, 0, 4);
    expect(refused.granted).toBe(0);
    expect(refused.waitMs).toBeGreaterThan(200);
    expect(refused.waitMs).toBeLessThanOrEqual(300);
    await sleep(refused.waitMs + 5);
    expect((await b.pace('one', 300, 0, 4)).granted).toBe(1);
    expect((await a.pace('one', 300, 0, 4)).granted).toBe(0);
    // Another key has a pace of its own.
    expect((await a.pace('two', 300, 0, 1)).granted).toBe(1);
  });

  it('saves nothing up while idle: after a long pause the next permit comes alone', async () => {
    const [a] = await pair();
    expect((await a.pace('idle', 50, 0, 1)).granted).toBe(1);
    await sleep(400);
    expect((await a.pace('idle', 50, 0, 8)).granted).toBe(1);
    expect((await a.pace('idle', 50, 0, 8)).granted).toBe(0);
  });

  it('grants several at once only within its tolerance (fast paces)', async () => {
    const [a, b] = await pair();
    // 0.25 ms apart, up to 1 ms ahead: the permit due now and the four due within the next millisecond.
    const first = await a.pace('fast', 0.25, 1, 100);
    expect(first.granted).toBe(5);
    expect((await b.pace('fast', 0.25, 1, 100)).granted).toBeLessThanOrEqual(5);
  });
});
