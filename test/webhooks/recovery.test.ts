import { afterEach, describe, expect, it } from 'vitest';
import { newId, nowIso } from '../../src/kernel/new-id.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

describe('deliveries across stops, restarts and dead instances', { timeout: 40_000 }, () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  /** A target that holds every request open until `release()`, then answers 200. */
  const hangingReceiver = async () => {
    const receiver = new Receiver();
    await receiver.start();
    cleanup.push(() => receiver.close());
    let hang = true;
    receiver.respond = () => (hang ? { hang: true } : {});
    return {
      receiver,
      release: () => {
        hang = false;
      },
    };
  };

  const outbox = (t: TestPlatform) =>
    t.platform.context.database.db.selectFrom('event_outbox').select(['id', 'event_id', 'status']).execute();

  it('makes every pending delivery after the platform is closed mid-delivery and started again', async () => {
    const { receiver, release } = await hangingReceiver();

    const first = await startPlatform(FAST_WEBHOOKS);
    cleanup.push(() => first.close());
    const admin = await first.adminToken();
    await createSubscription(first, admin, {
      event_patterns: ['restart.*'],
      webhook_config: { url: `${receiver.url}/hook`, timeout_seconds: 30 },
    });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push(await emit(first, admin, { event_type: 'restart.event', data: { i } }));
    // The target holds the first deliveries open; the platform goes down while they hang.
    await until(() => receiver.requests.length >= 1, 'deliveries in flight');
    await first.platform.close();

    // Leases last 60 s: deliveries made within the 10 s below prove the stopped instance handed its rows back.
    release();
    const second = await startPlatform(FAST_WEBHOOKS, { storage: first.storage });
    cleanup.push(() => second.close());
    await until(
      async () => (await outbox(second)).every((r) => r.status === 'delivered'),
      'every delivery made after the restart',
    );
    const answered = new Set(receiver.requests.slice(-6).map((r) => r.json.event_id));
    for (const id of ids) expect(answered.has(id), id).toBe(true);
    const rows = await outbox(second);
    expect(rows).toHaveLength(6);
  });

  it('takes over the deliveries of an instance that died once their leases expire, not before', async () => {
    const receiver = new Receiver();
    await receiver.start();
    cleanup.push(() => receiver.close());
    const t = await startPlatform(FAST_WEBHOOKS);
    cleanup.push(() => t.close());
    const admin = await t.adminToken();
    const sub = await createSubscription(t, admin, {
      event_patterns: ['orphan.*'],
      webhook_config: { url: `${receiver.url}/orphan` },
    });
    // Two rows a dead instance had claimed: one lease already expired, one expiring in 1.5 s.
    const db = t.platform.context.database.db;
    const expired = await emit(t, admin, { event_type: 'other.event' });
    const expiring = await emit(t, admin, { event_type: 'other.event' });
    const now = Date.now();
    for (const [eventId, leaseUntil] of [
      [expired, new Date(now - 1000).toISOString()],
      [expiring, new Date(now + 1500).toISOString()],
    ] as const) {
      const event = await db
        .selectFrom('events')
        .select(['sequence', 'priority'])
        .where('event_id', '=', eventId)
        .executeTakeFirstOrThrow();
      await db
        .insertInto('event_outbox')
        .values({
          id: newId('dlv'),
          event_id: eventId,
          subscription_id: sub.id,
          sequence: Number(event.sequence),
          priority: event.priority,
          status: 'delivering',
          attempts: 0,
          next_attempt_at: nowIso(),
          lease_owner: 'dead-instance',
          lease_until: leaseUntil,
          last_error: null,
          created_at: nowIso(),
          updated_at: nowIso(),
          replay_id: null,
        })
        .execute();
    }
    await until(
      () => receiver.at('/orphan').some((r) => r.json.event_id === expired),
      'the expired lease taken over',
    );
    expect(receiver.at('/orphan').some((r) => r.json.event_id === expiring)).toBe(false);
    await until(
      () => receiver.at('/orphan').some((r) => r.json.event_id === expiring),
      'the second lease taken over after it expired',
      5000,
    );
    expect(Date.now()).toBeGreaterThanOrEqual(now + 1500);
  });
  it('delivers a backlog highest priority first, and in emission order within a priority', async () => {
    const { receiver, release } = await hangingReceiver();
    // One delivery at a time: the target sees them in the order the dispatcher sends them.
    const config = { webhooks: { ...FAST_WEBHOOKS.webhooks, max_concurrency_per_subscription: 1 } };
    const first = await startPlatform(config);
    cleanup.push(() => first.close());
    const admin = await first.adminToken();
    await createSubscription(first, admin, {
      event_patterns: ['backlog.*'],
      webhook_config: { url: `${receiver.url}/hook`, timeout_seconds: 30 },
    });
    const priorities = [1, 9, 5, 9, 1, 5, 9, 1, 2, 9];
    const emitted: { id: string; priority: number }[] = [];
    for (const priority of priorities) {
      emitted.push({ id: await emit(first, admin, { event_type: 'backlog.event', priority }), priority });
    }
    await until(() => receiver.requests.length >= 1, 'the first delivery in flight');
    // Stopped while the first hangs: every row is handed back, and the restart finds the whole backlog due.
    await first.platform.close();
    release();
    const before = receiver.requests.length;
    const second = await startPlatform(config, { storage: first.storage });
    cleanup.push(() => second.close());
    await until(() => receiver.requests.length >= before + priorities.length, 'the backlog delivered');
    const order = receiver.requests.slice(before).map((r) => r.json.event_id as string);
    const expected = emitted
      .map((e, i) => ({ ...e, i }))
      .sort((a, b) => b.priority - a.priority || a.i - b.i)
      .map((e) => e.id);
    expect(order).toEqual(expected);
  });
});
