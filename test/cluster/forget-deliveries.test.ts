import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { until } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { Cluster, type Instance } from './cluster-instances.js';

/**
 * Two real instances claim from one outbox, each holding up to 8 × max_concurrency_per_subscription (4)
 * deliveries of a slow target. A replay cancelled, or a purge run, on A must stop what B holds too: B drops its
 * claimed deliveries that have not started instead of sending them (through the cluster bus).
 */
describe.sequential('deliveries held by another instance', { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let receiver: Receiver;
  let a: Instance;
  let b: Instance;
  const admin = new Map<Instance, string>();
  // Counted from 300 ms after the cancel or purge: what was under way then had reached the receiver already
  // (it counts a request on arrival and answers 500 ms later), so only a straggler or two may still arrive.
  const LATE_BOUND = 4;
  // B holds this many or more before the cancel or purge: at least 8 waiting behind its 4 under way, which it
  // would send within the 2.5 s watched if it never heard of the cancel or purge.
  const HELD_BY_B = 12;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    cluster = await Cluster.start(2, { PLATFORM__WEBHOOKS__POLL_INTERVAL_MS: '50' });
    [a, b] = cluster.instances as [Instance, Instance];
    for (const i of cluster.instances) admin.set(i, await i.adminToken());
  }, 90_000);
  afterAll(async () => {
    await cluster?.close();
    await receiver?.close();
  });

  const emitMany = async (on: Instance, type: string, count: number) => {
    const ids: string[] = [];
    for (let n = 0; n < count; n += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, count - n) }, (_, k) =>
          on.api('POST', '/api/v1/events', {
            token: admin.get(on)!,
            body: { event_type: type, data: { n: n + k } },
          }),
        ),
      );
      for (const r of batch) {
        expect(r.status, JSON.stringify(r.data)).toBe(201);
        ids.push(r.data.data.event.event_id);
      }
    }
    return ids;
  };
  const subscribe = async (path: string, patterns: string[]) => {
    const res = await a.api('POST', '/api/v1/events/subscriptions', {
      token: admin.get(a)!,
      body: {
        name: path.slice(1),
        event_patterns: patterns,
        webhook_config: { url: `${receiver.url}${path}` },
      },
    });
    expect(res.status, JSON.stringify(res.data)).toBe(201);
    return res.data.data.subscription.subscription_id as string;
  };
  const deliveryCount = async (sub: string, status: string) => {
    const res = await a.api(
      'GET',
      `/api/v1/events/subscriptions/${sub}/deliveries?status=${status}&per_page=1`,
      {
        token: admin.get(a)!,
      },
    );
    expect(res.status, JSON.stringify(res.data)).toBe(200);
    return res.data.data.pagination.total as number;
  };
  /** Held by the dispatchers of both instances (claimed, not yet settled), from their health. */
  const held = async (i: Instance) => {
    const res = await i.api('GET', '/api/v1/services/webhook_dispatcher', { token: admin.get(i)! });
    return Number(JSON.stringify(res.data).match(/"held_deliveries":(\d+)/)?.[1] ?? 0);
  };

  it('a replay cancelled on A sends nothing more from B either', async () => {
    // The events first, the subscription after: only the replay delivers to it.
    await emitMany(a, 'rcancel.entry', 120);
    const sub = await subscribe('/rcancel', ['rcancel.*']);
    receiver.respond = (r) => (r.path === '/rcancel' ? { delayMs: 500 } : {});
    const res = await a.api('POST', '/api/v1/events/replay', {
      token: admin.get(a)!,
      body: {
        event_filter: { event_types: ['rcancel.*'] },
        target_subscribers: [sub],
        replay_mode: 'parallel',
      },
    });
    expect(res.status, JSON.stringify(res.data)).toBe(202);
    const id = res.data.data.replay_id as string;
    const replayed = () => receiver.at('/rcancel').filter((r) => r.headers['x-platform-replay'] === id);
    // Both instances claimed their share (B by its poll) and have deliveries under way.
    await until(() => replayed().length >= 8, 15_000, 'the first replayed deliveries');
    expect(
      await eventually(async () => (await held(b)) >= HELD_BY_B, 10_000),
      'B holds deliveries waiting behind those under way',
    ).toBe(true);
    const cancel = await a.api('DELETE', `/api/v1/tasks/${id}`, { token: admin.get(a)! });
    expect(cancel.status, JSON.stringify(cancel.data)).toBe(200);
    // The notice travels through Redis; what was under way by then finishes.
    await new Promise((r) => setTimeout(r, 300));
    const atCancel = replayed().length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(replayed().length - atCancel).toBeLessThanOrEqual(LATE_BOUND);
    // Every replay delivery ends sent or dropped; none is left held or waiting, and none was sent unrecorded.
    const settled = await eventually(
      async () => (await deliveryCount(sub, 'pending')) + (await deliveryCount(sub, 'delivering')) === 0,
      10_000,
    );
    expect(settled, 'no replay delivery left pending or delivering').toBe(true);
    expect(await deliveryCount(sub, 'delivered')).toBe(replayed().length);
    expect(await deliveryCount(sub, 'dropped')).toBeGreaterThan(0);
    const status = await a.api('GET', `/api/v1/events/replay/${id}`, { token: admin.get(a)! });
    expect(status.data.data.replay.status).toBe('cancelled');
    receiver.respond = () => ({});
  });

  it('a purge run on A stops B from sending the deliveries of purged events it holds', async () => {
    await subscribe('/rpurge', ['rpurge.*']);
    receiver.respond = (r) => (r.path === '/rpurge' ? { delayMs: 500 } : {});
    const ids = new Set([
      ...(await emitMany(a, 'rpurge.entry', 60)),
      ...(await emitMany(b, 'rpurge.entry', 60)),
    ]);
    await until(() => receiver.at('/rpurge').length >= 8, 15_000, 'the first deliveries under way');
    expect(
      await eventually(async () => (await held(b)) >= HELD_BY_B, 10_000),
      'B holds deliveries waiting behind those under way',
    ).toBe(true);
    const purge = await a.api('POST', '/api/v1/events/purge', {
      token: admin.get(a)!,
      body: { criteria: { event_types: ['rpurge.*'] } },
    });
    expect(purge.status, JSON.stringify(purge.data)).toBe(202);
    const purgeId = purge.data.data.purge_id as string;
    let record: unknown;
    const done = await eventually(async () => {
      const res = await a.api('GET', `/api/v1/events/purge/${purgeId}`, { token: admin.get(a)! });
      record = res.data.data.purge;
      return res.data.data.purge.status === 'completed';
    }, 30_000);
    expect(done, `the purge completes: ${JSON.stringify(record)}`).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    const atPurge = receiver.at('/rpurge').length;
    await new Promise((r) => setTimeout(r, 2500));
    const after = receiver.at('/rpurge').slice(atPurge);
    expect(after.length).toBeLessThanOrEqual(LATE_BOUND);
    for (const r of after) expect(ids.has(r.json.event_id)).toBe(true);
    // Nothing stays held for events that no longer exist.
    for (const i of [a, b]) {
      expect(await eventually(async () => (await held(i)) === 0, 5000), `${i.name} holds nothing`).toBe(true);
    }
    receiver.respond = () => ({});
  });
});
