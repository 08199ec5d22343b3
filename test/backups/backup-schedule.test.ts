import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupFolder } from './backup-fixtures.js';

describe('scheduled backups', () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    // Six fields: every second, so the test sees several occurrences quickly.
    t = await startPlatform({ backups: { schedule: '* * * * * *', retention_count: 2 } });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('writes scheduled backups as backup tasks and keeps only the newest retention_count of them', async () => {
    const manual = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    // A scheduled run may hold the lock at this moment; then the next attempt gets it.
    let manualId = manual.data.data?.backup_id as string | undefined;
    if (manual.statusCode === 409) {
      await eventually(async () => {
        const retry = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
        manualId = retry.data.data?.backup_id;
        return retry.statusCode === 201;
      }, 10_000);
    }
    expect(manualId).toMatch(/^bkp_/);

    let completed: { result: { backup_id: string; deleted_backups: string[] } }[] = [];
    const enough = await eventually(async () => {
      const res = await t.request('GET', '/api/v1/tasks?type=backup&status=completed&per_page=100', {
        token: admin,
      });
      completed = res.data.data.tasks;
      return completed.length >= 4;
    }, 20_000);
    expect(enough, `scheduled backup tasks: ${completed.length}`).toBe(true);

    // Stop the schedule and let a run under way finish, so the catalogue holds still while it is read.
    const off = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { backups: { schedule: '' } },
    });
    expect(off.statusCode).toBe(200);
    const idle = await eventually(async () => {
      const res = await t.request('GET', '/api/v1/tasks?type=backup&status=running', { token: admin });
      return res.data.data.tasks.length === 0;
    }, 10_000);
    expect(idle).toBe(true);
    const finished = await t.request('GET', '/api/v1/tasks?type=backup&status=completed&per_page=100', {
      token: admin,
    });
    completed = finished.data.data.tasks;

    const list = (await t.request('GET', '/api/v1/backup', { token: admin })).data.data.backups as {
      id: string;
      type: string;
      status: string;
    }[];
    const scheduled = list.filter((b) => b.type === 'scheduled');
    expect(scheduled.map((b) => b.status)).toEqual(['completed', 'completed']);
    // The newest two are the ones the last tasks wrote.
    expect(scheduled.map((b) => b.id).sort()).toEqual(
      completed
        .slice(0, 2)
        .map((task) => task.result.backup_id)
        .sort(),
    );
    expect(list.some((b) => b.id === manualId)).toBe(true);
    const deleted = completed.flatMap((task) => task.result.deleted_backups);
    expect(deleted.length).toBe(completed.length - 2);
    const files = readdirSync(backupFolder(t));
    for (const id of deleted) {
      expect(list.some((b) => b.id === id)).toBe(false);
      expect(files.some((f) => f.startsWith(id))).toBe(false);
    }
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .select(['admin_user', 'details'])
      .where('action', '=', 'backup.create')
      .execute();
    expect(audit.some((a) => a.admin_user === 'system' && JSON.parse(a.details).type === 'scheduled')).toBe(
      true,
    );
  });

  it('follows a change of backups.schedule without a restart', async () => {
    const jobs = () => t.platform.context.scheduler.list().filter((j) => j.name === 'scheduled_backup');
    expect(jobs()).toHaveLength(0);
    const on = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { backups: { schedule: '0 3 * * *' } },
    });
    expect(on.statusCode).toBe(200);
    expect(jobs()).toHaveLength(1);
    expect(jobs()[0]?.cron).toBe('0 3 * * *');
    const off = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { backups: { schedule: '' } },
    });
    expect(off.statusCode).toBe(200);
    expect(jobs()).toHaveLength(0);
  });
});
