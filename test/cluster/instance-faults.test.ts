import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { RawSse, until } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { type ApiResponse, Cluster, type Instance } from './cluster-instances.js';

/**
 * Faults of one instance or of a webhook target, never of the shared services (those are
 * service-restarts.test.ts). Every check ends by reading back each acknowledged id.
 */
describe.sequential('a cluster surviving the faults of one of its parts', { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let receiver: Receiver;
  const admin = new Map<Instance, string>();

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    cluster = await Cluster.start(3, {
      // A short lease, so the deliveries a killed instance held are taken over within seconds.
      PLATFORM__WEBHOOKS__LEASE_SECONDS: '5',
      PLATFORM__WEBHOOKS__POLL_INTERVAL_MS: '50',
      PLATFORM__WEBHOOKS__RETRY_DELAY_SCALE: '0.01',
    });
    for (const i of cluster.instances) admin.set(i, await i.adminToken());
  }, 90_000);
  afterAll(async () => {
    await cluster?.close();
    await receiver?.close();
  });

  const subscribe = async (
    on: Instance,
    path: string,
    patterns: string[],
    retry?: Record<string, unknown>,
  ) => {
    const res = await on.api('POST', '/api/v1/events/subscriptions', {
      token: admin.get(on)!,
      body: {
        name: path.slice(1),
        event_patterns: [...patterns, `probe.${path.slice(1)}`],
        webhook_config: { url: `${receiver.url}${path}`, ...(retry ? { retry_policy: retry } : {}) },
      },
    });
    expect(res.status, JSON.stringify(res.data)).toBe(201);
  };
  /** Waits until every live instance counts `n` subscribers for `probe.<tag>` (they learn of them through Redis). */
  const untilAllSee = async (instances: Instance[], tag: string, n: number) => {
    for (const i of instances) {
      const seen = await eventually(async () => {
        const res = await i.api('POST', '/api/v1/events', {
          token: admin.get(i)!,
          body: { event_type: `probe.${tag}` },
        });
        return res.data?.data?.event?.subscriber_count === n;
      }, 10_000);
      expect(seen, `${i.name} sees the subscriptions`).toBe(true);
    }
  };
  const readBack = async (on: Instance, ids: string[]) => {
    for (const id of ids) {
      const res = await on.api('GET', `/api/v1/events/${id}`, { token: admin.get(on)! });
      expect(res.status, `acknowledged event ${id}`).toBe(200);
    }
  };

  it('loses nothing acknowledged when an instance is killed (SIGKILL) during emits and deliveries', async () => {
    const [a, b, c] = cluster.instances as [Instance, Instance, Instance];
    // Slow answers keep deliveries in flight, so the killed instance holds leases when it dies.
    receiver.respond = (req) => (req.path === '/kill' ? { delayMs: 150 } : {});
    await subscribe(a, '/kill', ['kill.*']);
    await untilAllSee([a, b, c], 'kill', 1);
    const sse = new RawSse(`${a.base}/api/v1/events/stream?patterns=kill.*`, {
      authorization: `Bearer ${admin.get(a)}`,
    });
    await sse.ready;

    const acknowledged: string[] = [];
    let failedOnC = 0;
    const emitter = async (on: Instance, count: number) => {
      for (let n = 0; n < count; n++) {
        let res: ApiResponse;
        try {
          res = await on.api('POST', '/api/v1/events', {
            token: admin.get(on)!,
            body: { event_type: 'kill.event', data: { on: on.name, n } },
          });
        } catch {
          // The killed instance's connection broke: this emit was never acknowledged.
          failedOnC += 1;
          continue;
        }
        if (res.status === 201) acknowledged.push(res.data.data.event.event_id);
      }
    };
    const killer = (async () => {
      await until(() => receiver.at('/kill').length >= 10, 10_000, 'deliveries under way');
      await cluster.kill(c);
    })();
    await Promise.all([emitter(a, 40), emitter(b, 40), emitter(c, 40), killer]);
    try {
      expect(failedOnC).toBeGreaterThan(0);
      expect(acknowledged.length).toBeGreaterThanOrEqual(80);

      await readBack(a, acknowledged);
      // Every acknowledged event is delivered; C's leased deliveries are taken over once the lease (5 s) expires.
      const deliveredIds = () => new Set(receiver.at('/kill').map((r) => r.json.event_id as string));
      await until(() => acknowledged.every((id) => deliveredIds().has(id)), 20_000, 'every delivery');
      const received = receiver.at('/kill').map((r) => r.json.event_id as string);
      const taken = new Set(received);
      // At least once: a duplicate is possible only for a delivery the killed instance had in flight.
      expect(received.length - taken.size).toBeLessThanOrEqual(64);
      // Each acknowledged event reaches `processed` (its outbox row delivered and settled).
      for (const id of acknowledged) {
        const settled = await eventually(async () => {
          const res = await b.api('GET', `/api/v1/events/${id}`, { token: admin.get(b)! });
          return res.data.data.event.status === 'processed';
        }, 10_000);
        expect(settled, `event ${id} processed`).toBe(true);
      }
      // A's stream client saw every acknowledged event (C's too, through Redis or the hub's gap fill), in order.
      await until(
        () => acknowledged.every((id) => sse.payloads().some((p) => p.event_id === id)),
        10_000,
        'stream',
      );
      const seqs = sse.payloads().map((p) => p.sequence as number);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect(new Set(seqs).size).toBe(seqs.length);
    } finally {
      sse.close();
      receiver.respond = () => ({});
    }
  });

  it('delivers everything, in retry order, to a webhook receiver that was down for a while', async () => {
    const live = cluster.instances.filter(
      (i) => i.process.child.exitCode === null && !i.process.child.killed,
    );
    const [a, b] = live as [Instance, Instance];
    let down = true;
    receiver.respond = (req) => (req.path === '/down' && down ? { status: 503 } : {});
    await subscribe(a, '/down', ['down.*'], {
      max_attempts: 10,
      retry_delay_seconds: 5,
      exponential_backoff: true,
    });
    await untilAllSee(live, 'down', 1);
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) {
      const on = live[n % live.length]!;
      const res = await on.api('POST', '/api/v1/events', {
        token: admin.get(on)!,
        body: { event_type: 'down.event', data: { n } },
      });
      expect(res.status).toBe(201);
      ids.push(res.data.data.event.event_id);
    }
    // Down long enough for every delivery to fail at least twice (5 s × 0.01 = 50 ms, then 100 ms, …).
    await until(
      () => ids.every((id) => receiver.at('/down').filter((r) => r.json.event_id === id).length >= 2),
      10_000,
      'two failed attempts each',
    );
    const failedAttempts = receiver.at('/down').length;
    down = false;
    await until(
      () =>
        ids.every((id) =>
          receiver
            .at('/down')
            .slice(failedAttempts)
            .some((r) => r.json.event_id === id),
        ),
      20_000,
      'the retries after the receiver returned',
    );
    await new Promise((r) => setTimeout(r, 300));
    // Once back, each delivery arrives exactly once more (its successful attempt) and is never retried again.
    const afterReturn = receiver
      .at('/down')
      .slice(failedAttempts)
      .filter((r) => r.json.event_type === 'down.event')
      .map((r) => r.json.event_id as string);
    expect(afterReturn.sort()).toEqual([...ids].sort());
    // Per delivery: attempts 1, 2, 3, … arrive in order, one at a time, each later than the one before.
    for (const id of ids) {
      const attempts = receiver.at('/down').filter((r) => r.json.event_id === id);
      const numbers = attempts.map((r) => r.json.attempt as number);
      expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, k) => k + 1));
      expect(new Set(attempts.map((r) => r.headers['x-platform-delivery-id'])).size).toBe(1);
    }
    await readBack(b, ids);
    for (const id of ids) {
      const settled = await eventually(async () => {
        const res = await b.api('GET', `/api/v1/events/${id}`, { token: admin.get(b)! });
        return res.data.data.event.status === 'processed';
      }, 10_000);
      expect(settled, `event ${id} processed`).toBe(true);
    }
    receiver.respond = () => ({});
  });
});
