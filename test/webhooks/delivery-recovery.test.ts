import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

const ONE_TRY = { max_attempts: 1, retry_delay_seconds: 1, exponential_backoff: false };

describe('resending and recovering failed deliveries', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let ann: { id: string; access: string };
  let bob: { id: string; access: string };
  let receiver: Receiver;
  // Paths whose requests the receiver refuses (500).
  const down = new Set<string>();

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    ann = await t.createUser('ann');
    bob = await t.createUser('bob');
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = (req) => ({ status: down.has(req.path) ? 500 : 200 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const base = (id: string) => `/api/v1/events/subscriptions/${id}`;
  const deliveries = async (id: string) =>
    (await t.request('GET', `${base(id)}/deliveries?per_page=100`, { token: ann.access })).data.data
      .deliveries as { delivery_id: string; event_id: string; status: string; replay_id: string | null }[];
  const settled = (id: string, count: number) =>
    until(async () => {
      const list = await deliveries(id);
      return list.length === count && list.every((d) => d.status !== 'pending' && d.status !== 'delivering');
    }, `${count} settled deliveries`);
  /** The event ids the receiver was sent at `path`, in arrival order. */
  const sentTo = (path: string) => receiver.at(path).map((r) => r.json.event_id as string);
  const subscribe = (path: string, pattern: string) =>
    createSubscription(t, ann.access, {
      event_patterns: [pattern],
      webhook_config: { url: `${receiver.url}${path}`, retry_policy: ONE_TRY },
    });
  const finished = async (taskId: string, token = ann.access) => {
    let task: any;
    await until(async () => {
      task = (await t.request('GET', `/api/v1/tasks/${taskId}`, { token })).data.data;
      return task.status !== 'running';
    }, `task ${taskId} to finish`);
    return task;
  };

  it('resends one failed delivery as a new delivery of the same event', async () => {
    down.add('/one');
    const sub = await subscribe('/one', 'one.*');
    const eventId = await emit(t, ann.access, { event_type: 'one.failed', data: { n: 1 } });
    await settled(sub.id, 1);
    const [failed] = await deliveries(sub.id);
    expect(failed!.status).toBe('failed');
    down.delete('/one');

    const res = await t.request('POST', `${base(sub.id)}/deliveries/${failed!.delivery_id}/resend`, {
      token: ann.access,
    });
    expect(res.statusCode, res.body).toBe(202);
    const { delivery_id: fresh, event_id, status } = res.data.data;
    expect({ event_id, status }).toEqual({ event_id: eventId, status: 'pending' });
    expect(fresh).not.toBe(failed!.delivery_id);
    await settled(sub.id, 2);
    const list = await deliveries(sub.id);
    expect(list.find((d) => d.delivery_id === fresh)?.status).toBe('delivered');
    expect(list.find((d) => d.delivery_id === failed!.delivery_id)?.status).toBe('failed');
    // The receiver saw the event twice: the failed try and the resend, with the new delivery's id.
    expect(sentTo('/one')).toEqual([eventId, eventId]);
    const last = receiver.at('/one').at(-1)!;
    expect(last.headers['webhook-id']).toBe(fresh);
    expect(String(last.headers['x-platform-replay'])).toMatch(/^rsd_/);

    // Unknown delivery, someone else's subscription, a paused subscription.
    const unknown = await t.request('POST', `${base(sub.id)}/deliveries/dlv_unknown/resend`, {
      token: ann.access,
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.data.error.code).toBe('DELIVERY_NOT_FOUND');
    const other = await t.request('POST', `${base(sub.id)}/deliveries/${fresh}/resend`, {
      token: bob.access,
    });
    expect(other.statusCode).toBe(404);
    expect(other.data.error.code).toBe('SUBSCRIPTION_NOT_FOUND');
    const paused = await t.request('PATCH', base(sub.id), { token: ann.access, body: { enabled: false } });
    expect(paused.statusCode).toBe(200);
    const refused = await t.request('POST', `${base(sub.id)}/deliveries/${fresh}/resend`, {
      token: ann.access,
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.data.error.code).toBe('SUBSCRIPTION_NOT_ACTIVE');
  });

  it('recovers, as a task, exactly the failed deliveries of the window', async () => {
    down.add('/many');
    const sub = await subscribe('/many', 'many.*');
    // Failed before the window: left alone.
    const early = await emit(t, ann.access, { event_type: 'many.early', data: {} });
    await settled(sub.id, 1);
    await new Promise((r) => setTimeout(r, 20));
    const since = new Date().toISOString();
    const failedIds: string[] = [];
    for (let n = 0; n < 3; n += 1)
      failedIds.push(await emit(t, ann.access, { event_type: 'many.x', data: { n } }));
    await settled(sub.id, 4);
    down.delete('/many');
    const okIds = [
      await emit(t, ann.access, { event_type: 'many.ok', data: { n: 1 } }),
      await emit(t, ann.access, { event_type: 'many.ok', data: { n: 2 } }),
    ];
    await settled(sub.id, 6);
    const before = receiver.at('/many').length;

    const res = await t.request('POST', `${base(sub.id)}/recover`, { token: ann.access, body: { since } });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.data.data.status).toBe('pending');
    const task = await finished(res.data.data.task_id);
    expect(task.type).toBe('subscription.recover');
    expect(task.status).toBe('completed');
    expect(task.progress).toBe(1);
    expect(task.result).toMatchObject({ failed_resent: 3, missed_sent: 0, deliveries_delivered: 3 });
    // Exactly the three failed ones, once each, in order: not the early one, not the delivered ones.
    expect(sentTo('/many').slice(before)).toEqual(failedIds);
    expect(sentTo('/many')).toContain(early);
    expect(sentTo('/many').filter((id) => okIds.includes(id))).toHaveLength(2);

    // Recovered deliveries are delivered now: a second recovery finds nothing left.
    const again = await t.request('POST', `${base(sub.id)}/recover`, { token: ann.access, body: { since } });
    expect((await finished(again.data.data.task_id)).result).toMatchObject({
      failed_resent: 0,
      missed_sent: 0,
    });
    expect(receiver.at('/many').length).toBe(before + 3);

    const bad = await t.request('POST', `${base(sub.id)}/recover`, {
      token: ann.access,
      body: { since, until: '2000-01-01T00:00:00.000Z' },
    });
    expect(bad.statusCode).toBe(422);
  });

  it('re-enabling answers missed_since, and recovery sends what was missed while paused', async () => {
    const sub = await subscribe('/gap', 'gap.*');
    const first = await emit(t, ann.access, { event_type: 'gap.before', data: {} });
    await settled(sub.id, 1);
    const pause = await t.request('PATCH', base(sub.id), { token: ann.access, body: { enabled: false } });
    expect(pause.data.data.missed_since).toBeUndefined();
    const missed = [
      await emit(t, ann.access, { event_type: 'gap.missed', data: { n: 1 } }),
      await emit(t, ann.access, { event_type: 'gap.missed', data: { n: 2 } }),
    ];
    // Another type: the subscription would not have received it.
    await emit(t, ann.access, { event_type: 'other.missed', data: {} });
    const recoverPaused = await t.request('POST', `${base(sub.id)}/recover`, {
      token: ann.access,
      body: { since: new Date(0).toISOString() },
    });
    expect(recoverPaused.statusCode).toBe(409);

    const enable = await t.request('PATCH', base(sub.id), { token: ann.access, body: { enabled: true } });
    expect(enable.statusCode).toBe(200);
    const missedSince = enable.data.data.missed_since as string;
    expect(Date.parse(missedSince)).toBeLessThanOrEqual(Date.now());
    expect(enable.data.data.subscription.status).toBe('active');
    // Enabling what is already active says nothing.
    const again = await t.request('PATCH', base(sub.id), { token: ann.access, body: { enabled: true } });
    expect(again.data.data.missed_since).toBeUndefined();

    const res = await t.request('POST', `${base(sub.id)}/recover`, {
      token: ann.access,
      body: { since: missedSince },
    });
    expect(res.statusCode, res.body).toBe(202);
    const task = await finished(res.data.data.task_id);
    expect(task.result).toMatchObject({ failed_resent: 0, missed_sent: 2, deliveries_delivered: 2 });
    expect(sentTo('/gap')).toEqual([first, ...missed]);
  });
  it("recovers only the events of the subscription's types, counting and scanning no other", async () => {
    const sub = await subscribe('/scan', 'scan.*');
    const pause = await t.request('PATCH', base(sub.id), { token: ann.access, body: { enabled: false } });
    expect(pause.statusCode).toBe(200);
    const missed = [
      await emit(t, ann.access, { event_type: 'scan.missed', data: { n: 1 } }),
      await emit(t, ann.access, { event_type: 'scan.missed', data: { n: 2 } }),
    ];
    for (let n = 0; n < 5; n += 1) await emit(t, ann.access, { event_type: 'noise.other', data: { n } });
    const enable = await t.request('PATCH', base(sub.id), { token: ann.access, body: { enabled: true } });
    const res = await t.request('POST', `${base(sub.id)}/recover`, {
      token: ann.access,
      body: { since: enable.data.data.missed_since },
    });
    expect(res.statusCode, res.body).toBe(202);
    const task = await finished(res.data.data.task_id);
    expect(task.result).toMatchObject({ failed_resent: 0, missed_sent: 2, deliveries_delivered: 2 });
    // The other types (and the platform's own events of the window) are neither counted nor read.
    expect(task.details).toMatchObject({ events_in_window: 2, events_scanned: 2 });
    expect(sentTo('/scan')).toEqual(missed);
  });

  it("neither resends nor recovers a failed delivery of an event its subscription's owner may no longer read", async () => {
    const admin = await t.adminToken();
    const mod = await t.createUser('recovery-moderator', ['moderator']);
    down.add('/mod');
    // A moderator reads the user.* family (read:users), so the subscription receives user.created.
    const sub = await createSubscription(t, mod.access, {
      event_patterns: ['user.*'],
      webhook_config: { url: `${receiver.url}/mod`, retry_policy: ONE_TRY },
    });
    const since = new Date().toISOString();
    await t.createUser('recovery-newcomer');
    const list = async () =>
      (await t.request('GET', `${base(sub.id)}/deliveries?per_page=100`, { token: admin })).data.data
        .deliveries as { delivery_id: string; event_id: string; status: string; replay_id: string | null }[];
    await until(async () => {
      const all = await list();
      return all.length === 1 && all[0]!.status === 'failed';
    }, 'the failed delivery of user.created');
    const [failed] = await list();
    down.delete('/mod');
    const demoted = await t.request('PUT', `/api/v1/admin/users/${mod.id}`, {
      token: admin,
      body: { roles: ['user'] },
    });
    expect(demoted.statusCode, demoted.body).toBe(200);

    // As if the delivery did not exist: to the owner, and to an admin (the event would go to the owner).
    for (const token of [mod.access, admin]) {
      const res = await t.request('POST', `${base(sub.id)}/deliveries/${failed!.delivery_id}/resend`, {
        token,
      });
      expect(res.statusCode, res.body).toBe(404);
      expect(res.data.error.code).toBe('DELIVERY_NOT_FOUND');
    }
    const res = await t.request('POST', `${base(sub.id)}/recover`, { token: admin, body: { since } });
    expect(res.statusCode, res.body).toBe(202);
    const task = await finished(res.data.data.task_id, admin);
    expect(task.status).toBe('completed');
    // The failed user.created is skipped, and counted.
    expect(task.result).toMatchObject({ failed_resent: 0, unreadable_skipped: 1, missed_sent: 0 });
    // Sent once (the failed try), never again; no delivery of it was queued.
    expect(sentTo('/mod').filter((id) => id === failed!.event_id)).toHaveLength(1);
    const after = await list();
    expect(after.filter((d) => d.event_id === failed!.event_id)).toHaveLength(1);
    expect(after.filter((d) => d.replay_id)).toEqual([]);
  });
});
