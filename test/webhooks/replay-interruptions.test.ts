import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

/** A replay whose events are purged under it, and a parallel replay cancelled while a slow target holds it up. */
describe('a replay interrupted by a purge or a cancel', { timeout: 40_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const status = async (id: string) =>
    (await t.request('GET', `/api/v1/events/replay/${id}`, { token: admin })).data.data.replay;
  const replayed = (path: string, replayId: string) =>
    receiver.at(path).filter((r) => r.headers['x-platform-replay'] === replayId);

  it('completes, leaving out the events purged while it ran, with no database error', async () => {
    const sub = await createSubscription(t, admin, {
      event_patterns: ['purged.*'],
      webhook_config: { url: `${receiver.url}/purged` },
    });
    for (let i = 0; i < 4; i++) await emit(t, admin, { event_type: 'purged.entry', data: { i } });
    await until(() => receiver.at('/purged').length === 4, 'the original deliveries');
    // Replayed deliveries take a second and a half each, so the purge below lands while the first is under way
    // (a purge on a loaded host took longer than half a second: the second delivery was sent before it).
    receiver.respond = (r) => (r.headers['x-platform-replay'] ? { delayMs: 1500 } : {});
    const res = await t.request('POST', '/api/v1/events/replay', {
      token: admin,
      body: {
        event_filter: { event_types: ['purged.*'] },
        target_subscribers: [sub.id],
        replay_mode: 'sequential',
      },
    });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.data.data.replay_id;
    await until(() => replayed('/purged', id).length === 1, 'the first replayed delivery');
    const purge = await t.request('POST', '/api/v1/events/purge', {
      token: admin,
      body: { criteria: { event_types: ['purged.*'] } },
    });
    expect(purge.statusCode, purge.body).toBe(202);
    await until(
      async () => ['completed', 'failed'].includes((await status(id)).status),
      'the end of the replay',
    );
    const done = await status(id);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.error).toBeNull();
    expect(JSON.stringify(done)).not.toMatch(/constraint|SQLITE|violates/i);
    // The three events it had not reached yet were gone: skipped, and the progress still ends at 100 %.
    expect(done.events_skipped).toBe(3);
    expect(done.progress).toEqual({ events_replayed: 4, total_events: 4, percentage: 100 });
    expect(replayed('/purged', id)).toHaveLength(1);
    receiver.respond = () => ({});
  });

  it('sends nothing more once cancelled: deliveries claimed but not yet under way are dropped', async () => {
    const sub = await createSubscription(t, admin, {
      event_patterns: ['slow.*'],
      webhook_config: { url: `${receiver.url}/slow` },
    });
    const events = 40;
    for (let i = 0; i < events; i++) await emit(t, admin, { event_type: 'slow.entry', data: { i } });
    await until(() => receiver.at('/slow').length === events, 'the original deliveries');
    const warnings: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'MaxListenersExceededWarning') warnings.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      // A slow target: 4 requests at a time (max_concurrency_per_subscription), while the dispatcher claims
      // up to 8 × 4 of the parallel replay's deliveries for it.
      receiver.respond = (r) => (r.headers['x-platform-replay'] ? { delayMs: 400 } : {});
      const res = await t.request('POST', '/api/v1/events/replay', {
        token: admin,
        body: {
          event_filter: { event_types: ['slow.*'] },
          target_subscribers: [sub.id],
          replay_mode: 'parallel',
        },
      });
      expect(res.statusCode, res.body).toBe(202);
      const id = res.data.data.replay_id;
      await until(() => replayed('/slow', id).length >= 4, 'the first replayed deliveries under way');
      const cancel = await t.request('DELETE', `/api/v1/tasks/${id}`, { token: admin });
      expect(cancel.statusCode, cancel.body).toBe(200);
      const atCancel = replayed('/slow', id).length;
      await new Promise((r) => setTimeout(r, 1500));
      // At most what was under way when the cancel came (its requests had already been counted, or were
      // just leaving): not the claimed rest of the backlog.
      expect(replayed('/slow', id).length - atCancel).toBeLessThanOrEqual(4);
      expect((await status(id)).status).toBe('cancelled');
      const rows = await t.platform.context.database.db
        .selectFrom('event_outbox')
        .select(['status'])
        .where('replay_id', '=', id)
        .execute();
      const sent = replayed('/slow', id).length;
      // Every delivery it had queued was either sent or dropped (how many it queued depends on the backend).
      expect(rows.filter((r) => r.status === 'dropped').length).toBe(rows.length - sent);
      expect(rows.filter((r) => r.status === 'pending' || r.status === 'delivering')).toEqual([]);
      // Waiting on each replayed event's deliveries leaves no listener behind on the replay's signal.
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      receiver.respond = () => ({});
    }
  });
});
