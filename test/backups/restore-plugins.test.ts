import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/backends.js';
import { eventually } from '../helpers/eventually.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupWritten, settledTask } from './backup-fixtures.js';

/** The first-party scheduler plugin (plugins/scheduler), with one job that never fires during the test. */
const JOBS = [{ name: 'yearly', cron: '0 0 1 1 *', event_type: 'clock.yearly' }];

describe('plugins after a restore, without a restart', () => {
  let t: TestPlatform;
  let admin: string;
  /** A second instance on the same storage (cluster only): it must follow the restore too. */
  let other: TestPlatform | undefined;
  let otherAdmin: string | undefined;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    if (backend === 'cluster') {
      other = await startPlatform({}, { storage: t.storage });
      otherAdmin = (await other.login('admin', ADMIN_PASSWORD)).access;
    }
  });
  afterAll(async () => {
    await other?.close();
    await t.close();
  });

  const backup = async () => {
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.data.data.backup_id as string;
    expect((await backupWritten(t, admin, id)).status).toBe('completed');
    return id;
  };
  const restore = async (id: string) => {
    const res = await t.request('POST', `/api/v1/backup/${id}/restore`, {
      token: admin,
      body: { confirm: true, create_backup_before_restore: false },
    });
    expect(res.statusCode, res.body).toBe(202);
    const task = await settledTask(t, admin, res.data.data.restore_id);
    expect(task.status, JSON.stringify(task)).toBe('completed');
    expect(task.details.steps.find((s: { name: string }) => s.name === 'plugins').status).toBe('completed');
  };
  /** The plugin's own route, on every instance. */
  const jobsEverywhere = async () =>
    Promise.all(
      [
        t.request('GET', '/api/v1/ext/scheduler/jobs', { token: admin }),
        other?.request('GET', '/api/v1/ext/scheduler/jobs', { token: otherAdmin! }),
      ]
        .filter((r) => r !== undefined)
        .map(async (r) => {
          const res = await r!;
          return { status: res.statusCode, jobs: res.data?.data?.jobs as { name: string }[] | undefined };
        }),
    );
  const answersEverywhere = (status: number) => async () =>
    (await jobsEverywhere()).every((r) => r.status === status);
  const pluginStatus = async () =>
    (await t.request('GET', '/api/v1/admin/plugins/scheduler', { token: admin })).data?.data?.plugin?.status;

  it('brings back an installed and enabled plugin that was uninstalled after the backup', async () => {
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token: admin,
      body: { plugin_name: 'scheduler', config: { jobs: JOBS } },
    });
    expect(installed.statusCode, installed.body).toBe(201);
    expect(await eventually(answersEverywhere(200))).toBe(true);
    const id = await backup();

    const removed = await t.request('DELETE', '/api/v1/admin/plugins/scheduler', { token: admin });
    expect(removed.statusCode).toBe(200);
    expect(await eventually(answersEverywhere(404))).toBe(true);

    await restore(id);
    expect(await pluginStatus()).toBe('active');
    // The restore's task ends once this instance has reloaded; the others follow the announcement.
    expect((await jobsEverywhere())[0]).toMatchObject({ status: 200, jobs: [{ name: 'yearly' }] });
    expect(await eventually(answersEverywhere(200))).toBe(true);
  });

  it('enables again a plugin disabled after the backup, with the configuration of the backup', async () => {
    const id = await backup();
    const changed = await t.request('PATCH', '/api/v1/plugins/scheduler', {
      token: admin,
      body: {
        config: { jobs: [{ name: 'daily', cron: '0 3 * * *', event_type: 'clock.daily' }] },
        enabled: false,
      },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(await eventually(answersEverywhere(404))).toBe(true);

    await restore(id);
    expect(await pluginStatus()).toBe('active');
    const jobs = async () =>
      (await jobsEverywhere()).every((r) => r.status === 200 && r.jobs?.[0]?.name === 'yearly');
    expect(await eventually(jobs)).toBe(true);
  });

  it('unloads a plugin installed after the backup, which the restored database does not have', async () => {
    await t.request('DELETE', '/api/v1/admin/plugins/scheduler', { token: admin });
    const id = await backup();
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token: admin,
      body: { plugin_name: 'scheduler', config: { jobs: JOBS } },
    });
    expect(installed.statusCode).toBe(201);
    expect(await eventually(answersEverywhere(200))).toBe(true);

    await restore(id);
    expect((await t.request('GET', '/api/v1/admin/plugins/scheduler', { token: admin })).statusCode).toBe(
      404,
    );
    expect(await eventually(answersEverywhere(404))).toBe(true);
  });
});
