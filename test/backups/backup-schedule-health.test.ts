import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { hookArchiveOpen } from './archive-open-hook.js';

/** While set, writing an archive (`….partial`) fails with ENOSPC, as on a full disk (see backup-disk-full). */
const disk = { full: false };
let unhook: (() => void) | undefined;

describe('the health of scheduled backups', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    unhook = hookArchiveOpen({ diskFull: () => disk.full });
    t = await startPlatform({ backups: { schedule: '* * * * * *' } });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    disk.full = false;
    unhook?.();
    await t.close();
  });

  const backupsService = async () =>
    (await t.request('GET', '/api/v1/services/backups', { token: admin })).data.data;

  it('warns about a failed scheduled run, and stops warning once the schedule is turned off', async () => {
    disk.full = true;
    const warned = await eventually(async () => (await backupsService()).health === 'warning', 15_000);
    expect(warned).toBe(true);
    const off = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { backups: { schedule: '' } },
    });
    expect(off.statusCode).toBe(200);
    // A run started just before the change may still end (and fail); wait until none is running.
    await eventually(async () => {
      const res = await t.request('GET', '/api/v1/tasks?type=backup&status=running', { token: admin });
      return res.data.data.tasks.length === 0;
    }, 15_000);
    disk.full = false;
    // Health checks are remembered briefly; the next fresh one must no longer warn.
    let service: { health: string } | undefined;
    const healthy = await eventually(async () => {
      service = await backupsService();
      return service?.health === 'healthy';
    }, 10_000);
    expect(healthy, JSON.stringify(service)).toBe(true);
    const health = await t.request('GET', '/api/v1/components/health', { token: admin });
    const backups = health.data.data.components.find((c: { name: string }) => c.name === 'backups');
    expect(backups.checks.find((c: { name: string }) => c.name === 'scheduled_backups')).toMatchObject({
      status: 'pass',
      schedule: null,
    });
  });
});
