import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupFolder, backupWritten, listedBackup, settledTask } from './backup-fixtures.js';

/** Events in the store while backups and restores run: enough for them to take a while, small enough for a test. */
const EVENTS = 30_000;
/** The longest a `GET /api/v1/health` may wait while a backup or restore runs. */
const STALL_MS = 50;

/**
 * Polls `GET /api/v1/health` every 10 ms until `stop()`; answers the longest time an answer took. A request
 * waits for whatever holds the event loop, so this is the longest stall the backup caused.
 */
function healthProbe(t: TestPlatform) {
  let running = true;
  let longest = 0;
  let answers = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const res = await t.request('GET', '/api/v1/health');
      longest = Math.max(longest, performance.now() - started);
      expect(res.statusCode).toBe(200);
      answers += 1;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { longest, answers };
    },
  };
}

const eventCount = async (t: TestPlatform) =>
  Number(
    (
      await t.platform.context.database.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('source', '=', 'bulk')
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('backups and restores as background work', { timeout: 120_000 }, () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    // One event through the real write path, copied EVENTS times by one statement (each copy its own id and
    // sequence): a store of that size in a moment. The copies' sequences are below every real one, so they
    // are history already read, not new events for the streams and the instances that follow the store.
    const emitted = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: {
        event_type: 'shop.order.created',
        source: 'bulk',
        data: { order: 'o-1', lines: Array.from({ length: 8 }, (_, i) => ({ sku: `sku-${i}`, qty: i })) },
      },
    });
    expect(emitted.statusCode).toBe(201);
    const template = emitted.data.data.event.event_id as string;
    const db = t.platform.context.database.db;
    const table = (await db.introspection.getTables()).find((x) => x.name === 'events')!;
    const others = table.columns.map((c) => c.name).filter((c) => c !== 'event_id' && c !== 'sequence');
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${sql.lit(EVENTS)})
      insert into events (event_id, sequence, ${sql.join(others.map((c) => sql.ref(c)))})
      select 'evt_bulk' || lpad_id, -i, ${sql.join(others.map((c) => sql.ref(`e.${c}`)))}
      from (select i, cast(i as text) as lpad_id from n) as k cross join events as e
      where e.event_id = ${template}`.execute(db);
    expect(await eventCount(t)).toBe(EVENTS + 1);
  }, 120_000);
  afterAll(async () => t?.close(), 60_000);

  it('answers a backup request before its archive exists, without stalling requests while it is written', async () => {
    const probe = healthProbe(t);
    const res = await t.request('POST', '/api/v1/admin/backup', {
      token: admin,
      body: { name: 'big', include_plugins: false },
    });
    expect(res.statusCode).toBe(201);
    const b = res.data.data.backup;
    expect(b).toMatchObject({ status: 'created', sha256: null, size_bytes: 0 });
    expect(existsSync(join(backupFolder(t), `${b.id}.tar.gz`))).toBe(false);
    expect((await listedBackup(t, admin, b.id)).status).toBe('running');
    // Nothing to download yet.
    const early = await t.request('GET', b.download_url, { token: admin });
    expect(early.statusCode).toBe(409);
    expect(early.data.error).toMatchObject({ code: 'RESOURCE_CONFLICT', details: { status: 'running' } });
    // The task shows its progress meanwhile.
    expect(
      await eventually(async () => {
        const task = (await t.request('GET', b.task_url, { token: admin })).data.data;
        return task.status !== 'running' || task.progress > 0;
      }, 30_000),
    ).toBe(true);

    const listed = await backupWritten(t, admin, b.id);
    const { longest, answers } = await probe.stop();
    expect(listed).toMatchObject({ status: 'completed' });
    expect(answers).toBeGreaterThan(5);
    expect(longest, `GET /api/v1/health took ${Math.round(longest)} ms at worst`).toBeLessThan(STALL_MS);

    // Complete: every event is in the archive, and it restores.
    const download = await t.request('GET', b.download_url, { token: admin });
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.length).toBe(listed.size_bytes);
    await t.platform.context.database.db.deleteFrom('events').where('source', '=', 'bulk').execute();
    expect(await eventCount(t)).toBe(0);

    const restoreProbe = healthProbe(t);
    const restore = await t.request('POST', `/api/v1/backup/${b.id}/restore`, {
      token: admin,
      body: { confirm: true, create_backup_before_restore: false },
    });
    expect(restore.statusCode).toBe(202);
    const task = await settledTask(t, admin, restore.data.data.restore_id);
    const restoring = await restoreProbe.stop();
    expect(task.status).toBe('completed');
    expect(task.result.tables.events).toBeGreaterThanOrEqual(EVENTS + 1);
    expect(await eventCount(t)).toBe(EVENTS + 1);
    expect(
      restoring.longest,
      `GET /api/v1/health took ${Math.round(restoring.longest)} ms at worst during the restore`,
    ).toBeLessThan(STALL_MS);
  });

  it('cancels a restore before its database step: nothing is replaced and every step is final', async () => {
    const backupId = (await t.request('POST', '/api/v1/backup', { token: admin, body: {} })).data.data
      .backup_id;
    expect((await backupWritten(t, admin, backupId)).status).toBe('completed');
    await t.createUser('after-backup');

    // The safety backup of the current state takes a while: the restore is cancelled during it.
    const res = await t.request('POST', `/api/v1/backup/${backupId}/restore`, {
      token: admin,
      body: { confirm: true },
    });
    expect(res.statusCode).toBe(202);
    const restoreId = res.data.data.restore_id;
    const stepOf = async (name: string) =>
      (await t.request('GET', `/api/v1/tasks/${restoreId}`, { token: admin })).data.data.details.steps.find(
        (s: { name: string }) => s.name === name,
      ).status;
    expect(await eventually(async () => (await stepOf('safety_backup')) === 'running', 20_000)).toBe(true);
    const cancel = await t.request('DELETE', `/api/v1/tasks/${restoreId}`, { token: admin });
    expect(cancel.statusCode).toBe(200);
    await t.platform.context.tasks.settled(restoreId);
    const task = await settledTask(t, admin, restoreId);
    expect(task.status).toBe('cancelled');
    expect(Object.fromEntries(task.details.steps.map((s: any) => [s.name, s.status]))).toEqual({
      maintenance: 'completed',
      safety_backup: 'cancelled',
      database: 'skipped',
      plugins: 'skipped',
      caches: 'skipped',
    });
    // Nothing was replaced: the user made after the backup is still there, maintenance is off again.
    const users = await t.platform.context.database.db.selectFrom('users').select('username').execute();
    expect(users.map((u) => u.username)).toContain('after-backup');
    expect(t.platform.context.maintenance.current().enabled).toBe(false);
    const audit = await t.request(
      'GET',
      `/api/v1/admin/audit-log?action=backup.restore&resource_id=${backupId}`,
      { token: admin },
    );
    const outcomes = audit.data.data.audit_entries.map(
      (e: { details: Record<string, unknown> }) => e.details,
    );
    expect(outcomes).toContainEqual(expect.objectContaining({ restore_id: restoreId, status: 'cancelled' }));
    expect(outcomes).not.toContainEqual(
      expect.objectContaining({ restore_id: restoreId, status: 'completed' }),
    );
  });

  it('refuses to cancel a restore once its database step has begun, and finishes every later step', async () => {
    const backupId = (await t.request('POST', '/api/v1/backup', { token: admin, body: {} })).data.data
      .backup_id;
    expect((await backupWritten(t, admin, backupId)).status).toBe('completed');
    await t.createUser('gone-after-restore');

    const res = await t.request('POST', `/api/v1/backup/${backupId}/restore`, {
      token: admin,
      body: { confirm: true, create_backup_before_restore: false },
    });
    expect(res.statusCode).toBe(202);
    const restoreId = res.data.data.restore_id;
    let refused: any;
    expect(
      await eventually(async () => {
        const task = (await t.request('GET', `/api/v1/tasks/${restoreId}`, { token: admin })).data.data;
        const database = task.details.steps.find((s: { name: string }) => s.name === 'database');
        if (database.status !== 'running') return task.status !== 'running';
        expect(task.cancellable).toBe(false);
        refused = await t.request('DELETE', `/api/v1/tasks/${restoreId}`, { token: admin });
        return true;
      }, 20_000),
    ).toBe(true);
    expect(refused, 'the database step was never seen running').toBeDefined();
    expect(refused.statusCode).toBe(409);
    expect(refused.data.error).toMatchObject({
      code: 'RESOURCE_CONFLICT',
      details: { id: restoreId, status: 'running', reason: 'not_cancellable' },
    });

    await t.platform.context.tasks.settled(restoreId);
    const task = await settledTask(t, admin, restoreId);
    expect(task.status).toBe('completed');
    expect(task.details.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['maintenance', 'completed'],
      ['safety_backup', 'skipped'],
      ['database', 'completed'],
      ['plugins', 'completed'],
      ['caches', 'completed'],
    ]);
    const users = await t.platform.context.database.db.selectFrom('users').select('username').execute();
    expect(users.map((u) => u.username)).not.toContain('gone-after-restore');
    expect(t.platform.context.maintenance.current().enabled).toBe(false);
  });

  it('cancels a backup while its archive is written: the backup fails as cancelled and leaves no file', async () => {
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: { include: ['database'] } });
    expect(res.statusCode).toBe(201);
    const id = res.data.data.backup_id;
    const cancel = await t.request('DELETE', `/api/v1/tasks/${id}`, { token: admin });
    expect(cancel.statusCode).toBe(200);
    await t.platform.context.tasks.settled(id);
    const task = await settledTask(t, admin, id);
    expect(task.status).toBe('cancelled');
    expect(await listedBackup(t, admin, id)).toMatchObject({ status: 'failed' });
    expect(existsSync(join(backupFolder(t), `${id}.tar.gz`))).toBe(false);
    // The lock is free again.
    const next = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['configuration'] },
    });
    expect(next.statusCode).toBe(201);
    expect((await backupWritten(t, admin, next.data.data.backup_id)).status).toBe('completed');
  });
});
