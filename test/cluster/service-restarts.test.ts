import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { RawSse, until, WsClient } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { PrivatePostgres, PrivateRedis } from './backing-services.js';
import { type ApiResponse, Cluster, type Instance } from './cluster-instances.js';

/** A 503 while a service is down must come at once, not after a connect timeout. */
const FAST_MS = 2000;
/** A request still unanswered after this long counts as hung. */
const HANG_MS = 5000;
/** How soon a live (pub/sub) message reaches another instance's stream client. */
const LIVE_MS = 1000;

/**
 * PostgreSQL and Redis go away under a running cluster and come back. The file owns both servers (a private
 * PostgreSQL cluster and `redis-server` on free ports), so it runs beside the rest of the suite, whose shared
 * services it never touches. Each check reads back every id that was acknowledged.
 */
describe.sequential('a cluster surviving restarts of PostgreSQL and Redis', { timeout: 60_000 }, () => {
  let postgres: PrivatePostgres | undefined;
  let redis: PrivateRedis | undefined;
  let cluster: Cluster | undefined;
  const receiver = new Receiver();
  let instances: Instance[];
  const admin = new Map<Instance, string>();

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([PrivatePostgres.create(), PrivateRedis.create()]);
    await receiver.start();
    const dataDir = mkdtempSync(join(tmpdir(), 'platform-restarts-'));
    // Two instances are enough for every check here (one emits, the other streams), and start sooner than three.
    cluster = await Cluster.start(
      2,
      { PLATFORM__WEBHOOKS__POLL_INTERVAL_MS: '50', PLATFORM__WEBHOOKS__RETRY_DELAY_SCALE: '0.01' },
      {
        tree: {
          storage: { data_dir: dataDir },
          database: { url: postgres.url() },
          redis: { url: redis.url, key_prefix: 'restarts:' },
        },
        cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
      },
    );
    instances = cluster.instances;
    for (const i of instances) admin.set(i, await i.adminToken());
  }, 120_000);
  afterEach(async () => {
    await postgres?.start();
    await redis?.start();
    receiver.respond = () => ({});
  });
  afterAll(async () => {
    // An instance that died (rather than answering 503) says why in its own output.
    for (const i of instances ?? []) {
      if (i.process.child.exitCode !== null)
        console.error(`instance ${i.name} exited:\n${i.process.stderr()}`);
    }
    // Every step runs even when one before it fails: no process or temp folder outlives the file.
    const steps = [
      () => cluster?.close(),
      () => receiver.close(),
      () => postgres?.destroy(),
      () => redis?.destroy(),
    ];
    const failures: unknown[] = [];
    for (const step of steps) await Promise.resolve(step()).catch((err: unknown) => failures.push(err));
    if (failures.length > 0) throw failures[0];
  }, 60_000);

  /** Emits in a loop on one instance until `stop()`; every answer is kept with when it started. */
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
            timeoutMs: HANG_MS,
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
        answers.filter((a) => a.res?.status === 201).map((a) => a.res!.data.data.event.event_id as string),
      stop: async () => {
        running = false;
        await done;
      },
    };
  };
  /** Every loop answer was a 201 or a fast 503 SERVICE_UNAVAILABLE: no 500, no hang, no broken connection. */
  const expectOnly201OrFast503 = (answers: { res?: ApiResponse; error?: string }[]) => {
    for (const a of answers) {
      expect(a.error, 'no request hung or broke').toBeUndefined();
      expect([201, 503], JSON.stringify(a.res?.data)).toContain(a.res!.status);
      if (a.res!.status === 503) {
        expect(a.res!.data.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(a.res!.ms, 'a 503 answers fast').toBeLessThan(FAST_MS);
      }
    }
  };
  const readBack = async (on: Instance, ids: string[]) => {
    for (let i = 0; i < ids.length; i += 10) {
      const batch = ids.slice(i, i + 10);
      const answers = await Promise.all(
        batch.map((id) => on.api('GET', `/api/v1/events/${id}`, { token: admin.get(on)! })),
      );
      for (const [n, res] of answers.entries())
        expect(res.status, `acknowledged event ${batch[n]}`).toBe(200);
    }
  };
  /** The instances are the processes the cluster started: nothing restarted them. */
  const expectSameProcesses = (pids: (number | undefined)[]) => {
    for (const [n, i] of instances.entries()) {
      expect(i.process.child.exitCode, `${i.name} still runs`).toBeNull();
      expect(i.process.child.pid).toBe(pids[n]);
    }
  };

  it('answers 503 fast while PostgreSQL is down, never hangs or fails with 500, and recovers by itself', async () => {
    const pids = instances.map((i) => i.process.child.pid);
    const loops = instances.map((i) => emitLoop(i, 'pg.event'));
    try {
      await until(() => loops.every((l) => l.acknowledged().length >= 3), 20_000, 'emits before the restart');
      await postgres!.stop();
      const downFrom = performance.now();
      // While it is down, every instance answers reads and readiness with 503 SERVICE_UNAVAILABLE, quickly.
      for (const i of instances) {
        for (const path of ['/api/v1/events?per_page=1', '/api/v1/ready']) {
          const res = await i.api('GET', path, { token: admin.get(i)!, timeoutMs: HANG_MS });
          expect(res.status, `${i.name} ${path} while PostgreSQL is down`).toBe(503);
          expect(res.data.error.code).toBe('SERVICE_UNAVAILABLE');
          expect(res.ms).toBeLessThan(FAST_MS);
        }
      }
      // And every emit loop has met the outage (several times) before PostgreSQL comes back.
      await until(
        () => loops.every((l) => l.answers.filter((a) => a.at > downFrom).length >= 3),
        10_000,
        'emits while PostgreSQL is down',
      );
      const downUntil = performance.now();
      await postgres!.start();
      // Each instance recovers without help: its emits succeed again and it reports ready.
      for (const [n, l] of loops.entries()) {
        const before = l.acknowledged().length;
        const recovered = await eventually(async () => l.acknowledged().length > before + 2, 20_000);
        expect(recovered, `${instances[n]!.name} emits again`).toBe(true);
      }
      for (const i of instances) {
        const ready = await eventually(
          async () => (await i.api('GET', '/api/v1/ready')).status === 200,
          10_000,
        );
        expect(ready, `${i.name} is ready again`).toBe(true);
      }
      for (const l of loops) await l.stop();
      expectSameProcesses(pids);
      const answers = loops.flatMap((l) => l.answers);
      const during = answers.filter((a) => a.at > downFrom && a.at < downUntil);
      expect(during.length).toBeGreaterThanOrEqual(3 * loops.length);
      for (const a of during) expect(a.res?.status, 'an emit while PostgreSQL is down').toBe(503);
      expectOnly201OrFast503(answers);
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
    const [a, b] = instances as [Instance, Instance];
    const pids = instances.map((i) => i.process.child.pid);
    const created = await a.api('POST', '/api/v1/events/subscriptions', {
      token: admin.get(a)!,
      body: {
        name: 'redis',
        event_patterns: ['redis.*', 'probe.*'],
        webhook_config: { url: `${receiver.url}/redis` },
      },
    });
    expect(created.status, JSON.stringify(created.data)).toBe(201);
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
    // Both kinds of stream client on B, which emits nothing while Redis is down: what A emits meanwhile can
    // reach B's clients only from the store.
    const sse = new RawSse(`${b.base}/api/v1/events/stream?patterns=redis.*`, {
      authorization: `Bearer ${admin.get(b)}`,
    });
    const ws = new WsClient(`${b.base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${admin.get(b)}`);
    try {
      await Promise.all([sse.ready, ws.opened]);
      ws.send({ action: 'subscribe', patterns: ['redis.*'] });
      await until(() => ws.of('subscribed').length === 1, 5000, 'the WebSocket subscription');
      const streamed = {
        sse: () => sse.payloads().map((p) => ({ id: p.event_id as string, sequence: p.sequence as number })),
        websocket: () =>
          ws
            .of('event')
            .map((m) => ({ id: m.event.event_id as string, sequence: m.event.sequence as number })),
      };
      // Slow answers spread the deliveries of 40 events over the time Redis is down.
      receiver.respond = (req) => (req.path === '/redis' ? { delayMs: 100 } : {});
      const before: string[] = [];
      for (let n = 0; n < 40; n++) {
        const on = instances[n % 2]!;
        const res = await on.api('POST', '/api/v1/events', {
          token: admin.get(on)!,
          body: { event_type: 'redis.before', data: { n } },
        });
        expect(res.status).toBe(201);
        before.push(res.data.data.event.event_id);
      }
      const loop = emitLoop(a, 'redis.during');
      let downFrom = 0;
      let downUntil = 0;
      try {
        await redis!.stop();
        downFrom = performance.now();
        await new Promise((r) => setTimeout(r, 2000));
        downUntil = performance.now();
        await redis!.start();
        const count = loop.acknowledged().length;
        const goesOn = await eventually(async () => loop.acknowledged().length > count + 2, 20_000);
        expect(goesOn, 'A emits after Redis is back').toBe(true);
      } finally {
        await loop.stop();
      }
      expectSameProcesses(pids);
      // Durable delivery went on without Redis: deliveries arrived while it was down.
      const deliveredWhileDown = receiver.at('/redis').filter((r) => r.at > downFrom && r.at < downUntil);
      expect(deliveredWhileDown.length).toBeGreaterThan(0);
      const answers = loop.answers;
      // Emitting goes on without Redis (rate limits count per instance meanwhile): these are what B's stream
      // clients can only get from the store.
      const emittedWhileDown = answers.filter(
        (x) => x.res?.status === 201 && x.at > downFrom && x.at < downUntil,
      );
      expect(emittedWhileDown.length).toBeGreaterThan(0);
      expectOnly201OrFast503(answers);
      const acknowledged = [...before, ...loop.acknowledged()];
      await readBack(b, acknowledged);
      /** Both of B's clients have every acknowledged event so far. */
      const streamedAll = () =>
        Object.values(streamed).every((events) => {
          const ids = new Set(events().map((e) => e.id));
          return acknowledged.every((id) => ids.has(id));
        });
      // Live fan-out works again once the instances have reconnected: an event emitted on A reaches B's clients
      // within LIVE_MS. Each try starts with B caught up, so the store check (StreamHub), which acts only when
      // two of its 2-second rounds found B behind, could not bring that event sooner than 2 s: it came live.
      let live = false;
      for (let attempt = 0; attempt < 10 && !live; attempt++) {
        await until(streamedAll, 15_000, 'the stream clients to have every acknowledged event');
        const after = await a.api('POST', '/api/v1/events', {
          token: admin.get(a)!,
          body: { event_type: 'redis.after', data: { attempt } },
        });
        expect(after.status).toBe(201);
        const id = after.data.data.event.event_id as string;
        acknowledged.push(id);
        live = await eventually(
          async () =>
            streamed.sse().some((e) => e.id === id) && streamed.websocket().some((e) => e.id === id),
          LIVE_MS,
        );
      }
      expect(live, 'an event emitted on A reaches B live').toBe(true);
      // B's stream clients have every acknowledged event (those whose live message was lost backfilled from
      // the store), each once, in sequence order.
      await until(streamedAll, 15_000, 'the stream clients to have every acknowledged event');
      for (const [kind, events] of Object.entries(streamed)) {
        const ids = events().map((e) => e.id);
        expect(new Set(ids).size, `${kind}: no event twice`).toBe(ids.length);
        const seqs = events().map((e) => e.sequence);
        expect(seqs, `${kind}: in sequence order`).toEqual([...seqs].sort((x, y) => x - y));
      }
      // And every acknowledged event was delivered to the webhook.
      const delivered = () => new Set(receiver.at('/redis').map((r) => r.json.event_id as string));
      await until(() => acknowledged.every((id) => delivered().has(id)), 20_000, 'every webhook delivery');
    } finally {
      sse.close();
      ws.close();
    }
  });
});
