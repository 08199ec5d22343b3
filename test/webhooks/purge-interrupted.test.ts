import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/kernel/new-id.js';
import { insertDeadInstanceTask } from '../helpers/dead-instance-task.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { emit } from './webhook-fixtures.js';

/**
 * A purge whose instance died (kill -9) after a batch committed but before its progress was written behind:
 * the purge that resumes it reports exactly how many events were deleted, and its progress on the way.
 */
describe('a purge resumed after its instance died', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    // A short lease, so the dead instance's task is taken over within a second.
    t = await startPlatform({ tasks: { lease_seconds: 1 } });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t?.close();
  });

  const db = () => t.platform.context.database.db;
  const remaining = async (type: string) =>
    Number(
      (
        await db()
          .selectFrom('events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('event_type', '=', type)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('reports every deleted event, also those of the batch whose progress the dead run never saved', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await emit(t, admin, { event_type: 'gone.entry', data: { i } }));
    const purgeId = newId('prg');
    // The dead run's last committed batch: 10 events deleted with its count, in one transaction; its details
    // (written behind) still say 0.
    await db()
      .transaction()
      .execute(async (trx) => {
        await trx.deleteFrom('events').where('event_id', 'in', ids.slice(0, 10)).execute();
        await trx
          .insertInto('event_purge_progress')
          .values({ purge_id: purgeId, events_purged: 10, updated_at: new Date().toISOString() })
          .execute();
      });
    await insertDeadInstanceTask(t, {
      id: purgeId,
      type: 'event_purge',
      resumable: true,
      progress: 0,
      details: JSON.stringify({
        criteria: { older_than_days: 0, event_types: ['gone.*'] },
        cutoff: new Date().toISOString(),
        dry_run: false,
        batch_size: 4,
        events_to_purge: 30,
        events_purged: 0,
        phase: 'in_progress',
      }),
    });
    const status = async () =>
      (await t.request('GET', `/api/v1/events/purge/${purgeId}`, { token: admin })).data.data.purge;
    expect(await eventually(async () => (await status()).status === 'completed', 15_000)).toBe(true);
    expect(await status()).toMatchObject({
      events_purged: 30,
      events_to_purge: 30,
      progress: { events_purged: 30, total_events: 30, percentage: 100 },
    });
    const task = (await t.request('GET', `/api/v1/tasks/${purgeId}`, { token: admin })).data.data;
    expect(task).toMatchObject({ status: 'completed', result: { events_purged: 30 }, progress: 1 });
    expect(await remaining('gone.entry')).toBe(0);
  });

  it('reports its progress while it runs, batch by batch, and deletes in bounded batches', async () => {
    for (let n = 0; n < 300; n += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          emit(t, admin, { event_type: 'slow.entry', data: { i: n + i } }),
        ),
      );
    }
    const res = await t.request('POST', '/api/v1/events/purge', {
      token: admin,
      body: { criteria: { older_than_days: 0, event_types: ['slow.*'] }, batch_size: 1 },
    });
    expect(res.statusCode).toBe(202);
    const id = res.data.data.purge_id;
    const seen = new Set<number>();
    await eventually(async () => {
      const p = (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge;
      seen.add(p.progress.events_purged);
      return p.status === 'completed';
    }, 15_000);
    const done = (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge;
    expect(done).toMatchObject({ status: 'completed', events_purged: 300, events_to_purge: 300 });
    // Progress was seen between the start and the end.
    expect([...seen].some((n) => n > 0 && n < 300)).toBe(true);
    expect(await remaining('slow.entry')).toBe(0);
  });
});
