import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

describe('event purge', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    await createSubscription(t, admin, {
      event_patterns: ['old.**'],
      webhook_config: { url: `${receiver.url}/p` },
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const db = () => t.platform.context.database.db;
  const count = async (
    table: 'events' | 'event_outbox' | 'delivery_attempts' | 'event_audit',
    ids: string[],
  ) =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('event_id', 'in', ids)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const purge = (body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/events/purge', { token: admin, body });
  const status = async (id: string) =>
    (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge;

  it('counts without deleting on a dry run, then deletes the matching events with everything attached', async () => {
    const old: string[] = [];
    for (let i = 0; i < 7; i++)
      old.push(await emit(t, admin, { event_type: 'old.audit.entry', data: { i } }));
    const kept = [await emit(t, admin, { event_type: 'keep.me' })];
    await until(() => receiver.requests.length === 7, 'the deliveries');
    // Backdate the old events: they were emitted 40 days ago.
    const longAgo = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await db().updateTable('events').set({ timestamp: longAgo }).where('event_id', 'in', old).execute();

    const dry = await purge({ criteria: { older_than_days: 30, event_types: ['old.**'] }, dry_run: true });
    expect(dry.statusCode, dry.body).toBe(202);
    expect(dry.data.data).toMatchObject({ status: 'started', dry_run: true, events_to_purge: 7 });
    expect(dry.data.data.purge_id).toMatch(/^prg_/);
    await until(async () => (await status(dry.data.data.purge_id)).status === 'completed', 'the dry run');
    expect(await status(dry.data.data.purge_id)).toMatchObject({
      dry_run: true,
      events_purged: 0,
      events_to_purge: 7,
    });
    expect(await count('events', old)).toBe(7);

    expect(
      (await purge({ criteria: { older_than_days: 30, event_types: ['keep.*'] }, dry_run: true })).data.data
        .events_to_purge,
    ).toBe(0);

    const real = await purge({
      criteria: { older_than_days: 30, event_types: ['old.*.*'], status: ['processed'] },
      batch_size: 3,
    });
    expect(real.data.data).toMatchObject({ dry_run: false, events_to_purge: 7 });
    const id = real.data.data.purge_id;
    await until(async () => (await status(id)).status === 'completed', 'the purge');
    expect(await status(id)).toMatchObject({
      events_purged: 7,
      progress: { events_purged: 7, total_events: 7, percentage: 100 },
      batch_size: 3,
    });
    for (const table of ['events', 'event_outbox', 'delivery_attempts', 'event_audit'] as const) {
      expect(await count(table, old), table).toBe(0);
    }
    expect(await count('events', kept)).toBe(1);
    const gone = await t.request('GET', `/api/v1/events/${old[0]}`, { token: admin });
    expect(gone.statusCode).toBe(404);
    const task = await t.request('GET', `/api/v1/tasks/${id}`, { token: admin });
    expect(task.data.data).toMatchObject({
      type: 'event_purge',
      status: 'completed',
      result: { events_purged: 7 },
    });
  });

  it('with older_than_days 0 takes every event emitted before the request, none after', async () => {
    const before = await emit(t, admin, { event_type: 'zero.day' });
    const res = await purge({ criteria: { older_than_days: 0, event_types: ['zero.*'] } });
    const after = await emit(t, admin, { event_type: 'zero.day' });
    await until(async () => (await status(res.data.data.purge_id)).status === 'completed', 'the purge');
    expect(await count('events', [before])).toBe(0);
    expect(await count('events', [after])).toBe(1);
  });

  it('never hands out the sequence number of a purged event again', async () => {
    const sequenceOf = async (id: string) =>
      (await t.request('GET', `/api/v1/events/${id}`, { token: admin })).data.data.event.sequence as number;
    const newest = await emit(t, admin, { event_type: 'newest.event' });
    const purged = await sequenceOf(newest);
    const res = await purge({ criteria: { older_than_days: 0, event_types: ['newest.*'] } });
    await until(async () => (await status(res.data.data.purge_id)).status === 'completed', 'the purge');
    expect(await count('events', [newest])).toBe(0);
    const next = await emit(t, admin, { event_type: 'after.purge' });
    expect(await sequenceOf(next)).toBeGreaterThan(purged);
    // Nothing stored since (the purge task's own task.completed event, this emit) took the purged number.
    const holders = await db()
      .selectFrom('events')
      .select('event_id')
      .where('sequence', '=', purged)
      .execute();
    expect(holders).toEqual([]);
  });

  it('validates its input and is for admins only', async () => {
    expect((await purge({ criteria: {}, batch_size: 10_001 })).statusCode).toBe(422);
    expect((await purge({})).statusCode).toBe(422);
    expect((await purge({ criteria: { event_types: ['no good'] } })).data.error.code).toBe(
      'INVALID_EVENT_TYPE',
    );
    const user = await t.createUser('purger', ['user']);
    const denied = await t.request('POST', '/api/v1/events/purge', {
      token: user.access,
      body: { criteria: {} },
    });
    expect(denied.data.error.code).toBe('ADMIN_REQUIRED');
    expect((await t.request('GET', '/api/v1/events/purge/prg_nope', { token: admin })).statusCode).toBe(404);
  });
});

describe('event retention', { timeout: 30_000 }, () => {
  it('purges events older than events.retention_days on the retention schedule', async () => {
    const t = await startPlatform({ events: { retention_days: 30, retention_schedule: '* * * * * *' } });
    try {
      const admin = await t.adminToken();
      const job = t.platform.context.scheduler.list().find((j) => j.name === 'event_retention');
      expect(job).toMatchObject({ cron: '* * * * * *' });
      const old = await emit(t, admin, { event_type: 'aged.event' });
      const fresh = await emit(t, admin, { event_type: 'aged.event' });
      const db = t.platform.context.database.db;
      await db
        .updateTable('events')
        .set({ timestamp: new Date(Date.now() - 31 * 86_400_000).toISOString() })
        .where('event_id', '=', old)
        .execute();
      const exists = async (id: string) =>
        (await db.selectFrom('events').select('event_id').where('event_id', '=', id).executeTakeFirst()) !==
        undefined;
      await until(async () => !(await exists(old)), 'the retention purge', 8000);
      expect(await exists(fresh)).toBe(true);
      const runs = await t.request('GET', '/api/v1/tasks?type=event_purge', { token: admin });
      const scheduled = runs.data.data.tasks.find(
        (task: { details: { scheduled?: boolean } }) => task.details.scheduled,
      );
      expect(scheduled?.details.criteria).toEqual({ older_than_days: 30 });
    } finally {
      await t.close();
    }
  });
});
