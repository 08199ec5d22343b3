import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getEvent, until } from './webhook-fixtures.js';

describe('event replay', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;
  let subA: string;
  let subB: string;
  const ids: string[] = [];

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    subA = (
      await createSubscription(t, admin, {
        event_patterns: ['ledger.*'],
        webhook_config: { url: `${receiver.url}/a` },
      })
    ).id;
    subB = (
      await createSubscription(t, admin, {
        event_patterns: ['ledger.*'],
        webhook_config: { url: `${receiver.url}/b` },
      })
    ).id;
    for (let i = 0; i < 5; i++) {
      ids.push(
        await emit(t, admin, {
          event_type: 'ledger.entry',
          data: { i },
          metadata: { correlation_id: 'batch-7' },
        }),
      );
    }
    await emit(t, admin, { event_type: 'ledger.other', data: {} });
    await until(() => receiver.requests.length === 12, 'the original deliveries');
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const replay = (body: Record<string, unknown>, token = admin) =>
    t.request('POST', '/api/v1/events/replay', { token, body });
  const status = async (id: string) =>
    (await t.request('GET', `/api/v1/events/replay/${id}`, { token: admin })).data.data.replay;

  it('replays the selected events to the named subscriber only, in order, with X-Platform-Replay', async () => {
    const before = receiver.requests.length;
    const res = await replay({
      event_filter: { event_types: ['ledger.entry'], correlation_id: 'batch-7' },
      target_subscribers: [subB],
      replay_mode: 'sequential',
    });
    expect(res.statusCode, res.body).toBe(202);
    const started = res.data.data;
    expect(started).toMatchObject({ status: 'started', events_to_replay: 5 });
    expect(started.replay_id).toMatch(/^rpl_/);
    expect(started.task_id).toBe(started.replay_id);
    expect(Number.isInteger(started.estimated_duration_minutes)).toBe(true);

    await until(async () => (await status(started.replay_id)).status === 'completed', 'completion');
    const done = await status(started.replay_id);
    expect(done).toMatchObject({
      progress: { events_replayed: 5, total_events: 5, percentage: 100 },
      deliveries: { queued: 5, delivered: 5, failed: 0 },
      errors: [],
      target_subscribers: [subB],
      replay_mode: 'sequential',
    });
    const replayed = receiver.requests.slice(before);
    expect(replayed.every((r) => r.path === '/b')).toBe(true);
    expect(replayed.map((r) => r.json.event_id)).toEqual(ids);
    for (const r of replayed) {
      expect(r.headers['x-platform-replay']).toBe(started.replay_id);
      expect(r.json.subscription_id).toBe(subB);
    }
    // The event's own delivery state is untouched; the replay shows in its attempts and audit trail.
    const event = await getEvent(t, admin, ids[0]!);
    expect(event.status).toBe('processed');
    expect(event.delivery_info.total_subscribers).toBe(2);
    expect(event.delivery_info.delivery_attempts).toHaveLength(3);
    const trail = (await t.request('GET', `/api/v1/events/${ids[0]}/audit`, { token: admin })).data.data
      .audit_trail;
    expect(trail.find((e: { action: string }) => e.action === 'event_replayed')).toMatchObject({
      actor: 'admin',
      details: { replay_id: started.replay_id, subscription_ids: [subB] },
    });
    // The replayed delivery's own entry carries the replay it was part of.
    expect(
      trail.filter(
        (e: { action: string; details: { replay_id?: string } }) =>
          e.action === 'event_delivered' && e.details.replay_id === started.replay_id,
      ),
    ).toEqual([expect.objectContaining({ details: expect.objectContaining({ subscription_id: subB }) })]);
    const task = await t.request('GET', `/api/v1/tasks/${started.replay_id}`, { token: admin });
    expect(task.data.data).toMatchObject({ type: 'event_replay', status: 'completed' });
  });

  it('sends to every matching subscription when no target is named (parallel mode)', async () => {
    const before = receiver.requests.length;
    const res = await replay({ event_filter: { event_types: ['ledger.*'] }, replay_mode: 'parallel' });
    expect(res.statusCode).toBe(202);
    expect(res.data.data.events_to_replay).toBe(6);
    await until(async () => (await status(res.data.data.replay_id)).status === 'completed', 'completion');
    expect(receiver.requests.length - before).toBe(12);
  });

  it('is cancelled through its task: nothing more is sent', async () => {
    const res = await replay({
      event_filter: { event_types: ['ledger.entry'] },
      target_subscribers: [subA],
      delay_between_events_ms: 400,
    });
    const id = res.data.data.replay_id;
    await until(async () => (await status(id)).progress.events_replayed >= 1, 'the first replayed event');
    const cancel = await t.request('DELETE', `/api/v1/tasks/${id}`, { token: admin });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect(cancel.data.data.status).toBe('cancelled');
    const sent = receiver.requests.filter((r) => r.headers['x-platform-replay'] === id).length;
    await new Promise((r) => setTimeout(r, 800));
    expect(receiver.requests.filter((r) => r.headers['x-platform-replay'] === id).length).toBe(sent);
    const record = await status(id);
    expect(record.status).toBe('cancelled');
    expect(record.progress.events_replayed).toBeLessThan(5);
  });

  it('goes on for the other targets when a target subscription is deleted during the replay', async () => {
    const gone = (
      await createSubscription(t, admin, {
        event_patterns: ['ledger.*'],
        webhook_config: { url: `${receiver.url}/gone` },
      })
    ).id;
    const res = await replay({
      event_filter: { event_types: ['ledger.entry'] },
      target_subscribers: [gone, subB],
      replay_mode: 'sequential',
      delay_between_events_ms: 300,
    });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.data.data.replay_id;
    await until(async () => (await status(id)).progress.events_replayed >= 1, 'the first replayed event');
    const removed = await t.request('DELETE', `/api/v1/events/subscriptions/${gone}`, { token: admin });
    expect(removed.statusCode).toBe(200);
    await until(
      async () => ['completed', 'failed'].includes((await status(id)).status),
      'the end of the replay',
    );
    const done = await status(id);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.progress.events_replayed).toBe(5);
    const toB = receiver.requests.filter((r) => r.headers['x-platform-replay'] === id && r.path === '/b');
    expect(toB.map((r) => r.json.event_id)).toEqual(ids);
    // The deleted target's remaining events are reported, and none of the errors is a database message.
    expect(done.errors.some((e: { subscription_id: string }) => e.subscription_id === gone)).toBe(true);
    expect(JSON.stringify(done.errors)).not.toMatch(/constraint|SQLITE|violates/i);
  });

  it('refuses bad requests with clear errors, and non-admins', async () => {
    expect((await replay({ target_subscribers: ['sub_missing'] })).data.error.code).toBe(
      'SUBSCRIPTION_NOT_FOUND',
    );
    expect((await replay({ event_filter: { event_types: ['bad type!'] } })).data.error.code).toBe(
      'INVALID_EVENT_TYPE',
    );
    const backwards = await replay({
      event_filter: { start_time: '2030-01-02T00:00:00Z', end_time: '2030-01-01T00:00:00Z' },
    });
    expect(backwards.statusCode).toBe(422);
    expect((await replay({ replay_mode: 'sideways' })).statusCode).toBe(422);
    expect((await replay({ unknown: 1 })).statusCode).toBe(422);
    const user = await t.createUser('replayer', ['user']);
    expect((await replay({}, user.access)).data.error.code).toBe('ADMIN_REQUIRED');
    const missing = await t.request('GET', '/api/v1/events/replay/rpl_nope', { token: admin });
    expect(missing.statusCode).toBe(404);
  });
});
