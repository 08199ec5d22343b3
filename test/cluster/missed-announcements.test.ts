import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { provisionStorage } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { PrivateRedis } from './backing-services.js';
import { Cluster, type Instance } from './cluster-instances.js';

/**
 * Changes stored in the database and announced through Redis, made while an instance cannot hear the
 * announcement (its pub/sub connection is down) or while Redis is away altogether. The file owns its Redis
 * (`redis-server` on a free port), so it can cut connections and stop the server without touching the suite's
 * shared Redis.
 */
describe.sequential('state changes announced while Redis cannot carry them', { timeout: 60_000 }, () => {
  let redis: PrivateRedis | undefined;
  let cluster: Cluster | undefined;
  const receiver = new Receiver();
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    redis = await PrivateRedis.create();
    await receiver.start();
    const storage = await provisionStorage();
    // Short task leases: a run whose cancellation was not announced is stopped at its next renewal (1 s).
    cluster = await Cluster.start(
      2,
      { PLATFORM__TASKS__LEASE_SECONDS: '3' },
      {
        tree: { ...storage.tree, redis: { url: redis.url, key_prefix: 'missed:' } },
        cleanup: storage.cleanup,
      },
    );
    [a, b] = cluster.instances as [Instance, Instance];
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
    await receiver.close();
    await redis?.destroy();
  }, 60_000);

  const payloadLimit = async (on: Instance) => {
    const res = await on.api('GET', '/api/v1/admin/config?section=events', { token: await on.adminToken() });
    expect(res.status).toBe(200);
    return {
      max: res.data.data.config.events.max_payload_bytes as number,
      version: res.data.data.metadata.config_version as string,
    };
  };
  const setLimit = async (on: Instance, max: number) => {
    const res = await on.api('PUT', '/api/v1/config', {
      token: await on.adminToken(),
      body: { events: { max_payload_bytes: max } },
    });
    expect(res.status, JSON.stringify(res.data)).toBe(200);
  };

  it('applies on B a change made on A while B could not hear it, once B can read it again', async () => {
    await setLimit(a, 5000);
    expect(await eventually(async () => (await payloadLimit(b)).max === 5000, 10_000)).toBe(true);

    // Every pub/sub connection drops and none may reconnect; A's command connection stays, so A can change
    // the configuration (its lock and announcement go through) while nobody listens.
    const control = new Redis(redis!.url);
    try {
      await control.config('SET', 'maxclients', '1');
      await control.client('KILL', 'TYPE', 'pubsub');
      await setLimit(a, 6000);
      expect(await payloadLimit(a)).toMatchObject({ max: 6000 });
    } finally {
      await control.config('SET', 'maxclients', '10000');
      await control.quit();
    }

    // B is connected again: it must converge on the stored change, not keep the one before for good.
    const converged = await eventually(async () => (await payloadLimit(b)).max === 6000, 15_000);
    expect(converged, 'B applies the change it missed').toBe(true);
    expect((await payloadLimit(b)).version).toBe((await payloadLimit(a)).version);
    const big = { blob: 'x'.repeat(5500) };
    const emit = await b.api('POST', '/api/v1/events', {
      token: await b.adminToken(),
      body: { event_type: 'resync.check', data: big },
    });
    expect(emit.status, JSON.stringify(emit.data)).toBe(201);
  });

  it('cancels on B, with Redis down, a task running on A: 200, and the run on A stops', async () => {
    const token = await a.adminToken();
    const sub = await a.api('POST', '/api/v1/webhooks', {
      token,
      body: { url: `${receiver.url}/task`, events: ['outage.task'], secret: 'outage-secret-1' },
    });
    expect(sub.status, JSON.stringify(sub.data)).toBe(201);
    for (let n = 0; n < 5; n++) {
      const res = await a.api('POST', '/api/v1/events', {
        token,
        body: { event_type: 'outage.task', data: { n } },
      });
      expect(res.status).toBe(201);
    }
    expect(await eventually(async () => receiver.at('/task').length >= 5, 10_000)).toBe(true);
    // A replay of the five, two seconds apart: a task that runs on A for about ten seconds.
    const replay = await a.api('POST', '/api/v1/events/replay', {
      token,
      body: {
        event_filter: { event_types: ['outage.task'] },
        replay_mode: 'sequential',
        delay_between_events_ms: 2000,
      },
    });
    expect(replay.status, JSON.stringify(replay.data)).toBe(202);
    const taskId = replay.data.data.task_id as string;
    expect(await eventually(async () => receiver.at('/task').length >= 6, 10_000)).toBe(true);

    await redis!.stop();
    try {
      const cancel = await b.api('DELETE', `/api/v1/tasks/${taskId}`, { token: await b.adminToken() });
      expect(cancel.status, JSON.stringify(cancel.data)).toBe(200);
      expect(cancel.data.data).toMatchObject({ id: taskId, status: 'cancelled' });
      // A hears of it from the database at its next lease renewal, and its run ends there.
      const stopped = await eventually(async () => {
        const task = await a.api('GET', `/api/v1/tasks/${taskId}`, { token });
        return (task.data.data.logs as { message: string }[]).some((l) =>
          l.message.includes('stopped after cancellation'),
        );
      }, 10_000);
      expect(stopped, 'the run on A stops').toBe(true);
      const sent = receiver.at('/task').length;
      await new Promise((r) => setTimeout(r, 2500));
      expect(receiver.at('/task').length, 'no replay delivery after the run stopped').toBe(sent);
    } finally {
      await redis!.start();
    }
  });

  it('keeps answering, and reports the stall, while Redis is connected but does not answer (CLIENT PAUSE)', async () => {
    const token = await a.adminToken();
    const control = new Redis(redis!.url);
    try {
      await control.client('PAUSE', '8000');
      const timed = async (request: Promise<{ status: number; ms: number }>) => {
        const res = await request;
        return { status: res.status, ms: Math.round(res.ms) };
      };
      // Every request counts a rate-limit hit in Redis: none may wait for the pause to end.
      const first = await Promise.all([
        timed(a.api('GET', '/api/v1/tasks', { token })),
        timed(a.api('GET', '/api/v1/auth/me', { token })),
        timed(b.api('GET', '/api/v1/events')),
      ]);
      const later = await timed(a.api('GET', '/api/v1/tasks', { token }));
      for (const res of [...first, later]) expect(res.ms, JSON.stringify(res)).toBeLessThan(1500);
      expect(first.map((r) => r.status)).toEqual([200, 200, 401]);
      expect(later.status).toBe(200);
      // The shared-state service and the cache's Redis level report the stall rather than waiting for it to end.
      const [state, status, cache] = await Promise.all([
        a.api('GET', '/api/v1/services/cluster_state', { token }),
        a.api('GET', '/api/v1/status', { token }),
        a.api('GET', '/api/v1/cache/status', { token }),
      ]);
      for (const res of [state, status, cache]) expect(res.ms).toBeLessThan(2500);
      expect(state.status).toBe(200);
      expect(state.data.data.health).toBe('unhealthy');
      expect(status.status).toBe(200);
      expect(cache.status).toBe(200);
      expect(cache.data.data.status).toBe('warning');
      // A configuration change needs its cluster-wide lock: 503 rather than waiting for the pause to end.
      const change = await a.api('PUT', '/api/v1/config', {
        token,
        body: { events: { retention_days: 11 } },
      });
      expect(change.ms).toBeLessThan(3000);
      expect(change.status, JSON.stringify(change.data)).toBe(503);
      expect(change.data.error.code).toBe('SERVICE_UNAVAILABLE');
    } finally {
      // Answered once the pause is over.
      await control.ping();
      await control.quit();
    }
    // The lock Redis granted after the pause, to a request that had given up, is free again at once.
    const after = await a.api('PUT', '/api/v1/config', { token, body: { events: { retention_days: 12 } } });
    expect(after.status, JSON.stringify(after.data)).toBe(200);
    expect(after.ms).toBeLessThan(2000);
  });
});
