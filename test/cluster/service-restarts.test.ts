import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { RawSse, until } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { ensureServicesRunning, postgres, redis } from './backing-services.js';
import { type ApiResponse, Cluster, type Instance } from './cluster-instances.js';

/**
 * PostgreSQL and Redis go away under a running cluster and come back. This file is the only one that
 * restarts them, and it runs alone in the `cluster-faults` Vitest project after every other test file.
 * Each check reads back every id that was acknowledged, and the services are always left running.
 */
describe.sequential('a cluster surviving restarts of PostgreSQL and Redis', { timeout: 90_000 }, () => {
  let cluster: Cluster;
  let receiver: Receiver;
  let instances: Instance[];
  const admin = new Map<Instance, string>();

  beforeAll(async () => {
    await ensureServicesRunning();
    receiver = new Receiver();
    await receiver.start();
    cluster = await Cluster.start(3, {
      PLATFORM__WEBHOOKS__POLL_INTERVAL_MS: '50',
      PLATFORM__WEBHOOKS__RETRY_DELAY_SCALE: '0.01',
    });
    instances = cluster.instances;
    for (const i of instances) admin.set(i, await i.adminToken());
  }, 120_000);
  afterEach(async () => {
    await ensureServicesRunning();
    receiver.respond = () => ({});
  });
  afterAll(async () => {
    await ensureServicesRunning();
    await cluster?.close();
    await receiver?.close();
  });

  /** Emits in a loop on one instance until `stop()`; every answer is kept with how long it took. */
  const emitLoop = (on: Instance, eventType: string) => {
    const answers: { res?: ApiResponse; error?: string; at: number }[] = [];
    let running = true;
    const done = (async () => {
      for (let n = 0; running; n++) {
        const at = performance.now();
        try {
          const res = await on.api('POST', '/api/v1/events', {
            token: admin.get(on)!,
            body: { event_type: eventType, data: { on: on.name, n } },
            timeoutMs: 10_000,
          });
          answers.push({ res, at });
          if (res.status !== 201) await new Promise((r) => setTimeout(r, 50));
        } catch (err) {
          answers.push({ error: (err as Error).message, at });
        }
      }
    })();
    return {
      answers,
      acknowledged: () =>
        answers.filter((a) => a.res?.status === 201).map((a) => a.res!.data.data.event.event_id),
      stop: async () => {
        running = false;
        await done;
      },
    };
  };
  const readBack = async (on: Instance, ids: string[]) => {
    for (const id of ids) {
      const res = await on.api('GET', `/api/v1/events/${id}`, { token: admin.get(on)! });
      expect(res.status, `acknowledged event ${id}`).toBe(200);
    }
  };
  const subscribe = async (path: string, patterns: string[]) => {
    const [a] = instances as [Instance];
    const res = await a.api('POST', '/api/v1/events/subscriptions', {
      token: admin.get(a)!,
      body: {
        name: path.slice(1),
        event_patterns: patterns,
        webhook_config: { url: `${receiver.url}${path}` },
      },
    });
    expect(res.status, JSON.stringify(res.data)).toBe(201);
  };

  it('answers 503 fast while PostgreSQL restarts, never hangs or fails with 500, and recovers by itself', async () => {
    const loops = instances.map((i) => emitLoop(i, 'pg.event'));
    try {
      await until(() => loops.every((l) => l.acknowledged().length >= 3), 20_000, 'emits before the restart');
      await postgres('stop');
      const downFrom = performance.now();
      // While it is down, every instance answers — with 503 SERVICE_UNAVAILABLE, quickly.
      for (const i of instances) {
        const me = await i.api('GET', '/api/v1/events?per_page=1', { token: admin.get(i)! });
        expect(me.status, `${i.name} while PostgreSQL is down`).toBe(503);
        expect(me.data.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(me.ms).toBeLessThan(6000);
      }
      await new Promise((r) => setTimeout(r, 1500));
      const downUntil = performance.now();
      await postgres('start');
      // Each instance recovers without help: its emits succeed again.
      for (const [n, l] of loops.entries()) {
        const before = l.acknowledged().length;
        const recovered = await eventually(async () => l.acknowledged().length > before + 2, 30_000);
        expect(recovered, `${instances[n]!.name} emits again`).toBe(true);
      }
      for (const l of loops) await l.stop();
      const answers = loops.flatMap((l) => l.answers);
      const during = answers.filter((a) => a.at > downFrom && a.at < downUntil);
      expect(during.length).toBeGreaterThan(0);
      for (const a of answers) {
        expect(a.error, 'no request hung or broke').toBeUndefined();
        expect([201, 503], JSON.stringify(a.res?.data)).toContain(a.res!.status);
        if (a.res!.status === 503) expect(a.res!.data.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(a.res!.ms).toBeLessThan(6000);
      }
      const [, b] = instances as [Instance, Instance];
      await readBack(
        b,
        loops.flatMap((l) => l.acknowledged()),
      );
    } finally {
      for (const l of loops) await l.stop();
    }
  });

  it('keeps delivering webhooks while Redis restarts, then resumes live fan-out and backfills stream clients', async () => {
    const [a, b, c] = instances as [Instance, Instance, Instance];
    await subscribe('/redis', ['redis.*', 'probe.*']);
    for (const i of instances) {
      const seen = await eventually(async () => {
        const res = await i.api('POST', '/api/v1/events', {
          token: admin.get(i)!,
          body: { event_type: 'probe.redis' },
        });
        return res.data?.data?.event?.subscriber_count === 1;
      }, 10_000);
      expect(seen, `${i.name} sees the subscription`).toBe(true);
    }
    const sse = new RawSse(`${b.base}/api/v1/events/stream?patterns=redis.*`, {
      authorization: `Bearer ${admin.get(b)}`,
    });
    await sse.ready;
    // Slow answers spread the deliveries of 40 events over the time Redis is down.
    receiver.respond = (req) => (req.path === '/redis' ? { delayMs: 100 } : {});
    const before: string[] = [];
    for (let n = 0; n < 40; n++) {
      const on = instances[n % 3]!;
      const res = await on.api('POST', '/api/v1/events', {
        token: admin.get(on)!,
        body: { event_type: 'redis.before', data: { n } },
      });
      expect(res.status).toBe(201);
      before.push(res.data.data.event.event_id);
    }
    const loops = [a, c].map((i) => emitLoop(i, 'redis.during'));
    let downFrom = 0;
    let downUntil = 0;
    try {
      await redis('stop');
      downFrom = performance.now();
      await new Promise((r) => setTimeout(r, 2000));
      downUntil = performance.now();
      await redis('start');
    } finally {
      await ensureServicesRunning();
    }
    try {
      for (const [n, l] of loops.entries()) {
        const count = l.acknowledged().length;
        const recovered = await eventually(async () => l.acknowledged().length > count + 2, 30_000);
        expect(recovered, `${[a, c][n]!.name} emits again`).toBe(true);
      }
    } finally {
      for (const l of loops) await l.stop();
    }
    // Durable delivery went on without Redis: deliveries arrived while it was down.
    const deliveredWhileDown = receiver.at('/redis').filter((r) => r.at > downFrom && r.at < downUntil);
    expect(deliveredWhileDown.length).toBeGreaterThan(0);
    const answers = loops.flatMap((l) => l.answers);
    // Emitting goes on without Redis (rate limits count per instance meanwhile): these are what B's stream
    // client can only get from the store.
    const emittedWhileDown = answers.filter(
      (x) => x.res?.status === 201 && x.at > downFrom && x.at < downUntil,
    );
    expect(emittedWhileDown.length).toBeGreaterThan(0);
    for (const x of answers) {
      expect(x.error, 'no request hung or broke').toBeUndefined();
      expect([201, 503], JSON.stringify(x.res?.data)).toContain(x.res!.status);
      expect(x.res!.ms).toBeLessThan(6000);
    }
    const acknowledged = [...before, ...loops.flatMap((l) => l.acknowledged())];
    await readBack(b, acknowledged);
    // Live fan-out works again: an event emitted on A now reaches B's stream client.
    const after = await a.api('POST', '/api/v1/events', {
      token: admin.get(a)!,
      body: { event_type: 'redis.after' },
    });
    expect(after.status).toBe(201);
    acknowledged.push(after.data.data.event.event_id);
    // B's stream client has every acknowledged event — those whose live message was lost backfilled from the
    // store — once each, in sequence order.
    await until(
      () => acknowledged.every((id) => sse.payloads().some((p) => p.event_id === id)),
      15_000,
      'the stream client to have every acknowledged event',
    );
    const seqs = sse.payloads().map((p) => p.sequence as number);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);
    sse.close();
    // And every acknowledged event was delivered to the webhook.
    const delivered = () => new Set(receiver.at('/redis').map((r) => r.json.event_id as string));
    await until(() => acknowledged.every((id) => delivered().has(id)), 20_000, 'every webhook delivery');
  });
});
