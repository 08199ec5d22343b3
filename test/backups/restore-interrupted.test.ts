import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pluginFolder, pluginFolderAside } from '../../src/backups/backup-files.js';
import { writeRestoreMarker } from '../../src/backups/restore-marker.js';
import { type CliProcess, cliEnv, startCli } from '../cli/cli-process.js';
import { api } from '../cluster/cluster-instances.js';
import { eventually } from '../helpers/eventually.js';
import {
  ADMIN_PASSWORD,
  provisionStorage,
  startPlatform,
  type TestPlatform,
} from '../helpers/test-platform.js';

/** Short leases: the dead process's task and backup lock expire within a second or two. */
const LEASES = { tasks: { lease_seconds: 1 }, backups: { lock_lease_seconds: 0.5 } };

const maintenanceOf = async (t: TestPlatform, token: string) =>
  (await t.request('GET', '/api/v1/admin/system/maintenance', { token })).data.data;

const restoreAudit = async (t: TestPlatform, token: string, backupId: string) =>
  (await t.request('GET', `/api/v1/admin/audit-log?action=backup.restore&resource_id=${backupId}`, { token }))
    .data.data.audit_entries as { admin_user: string; details: Record<string, unknown> }[];

// The first test kills a real platform process mid-restore (a cold start of node + tsx): give it time.
describe('a restore interrupted by the death of its process', { timeout: 120_000 }, () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });

  it('is noticed at the next start: maintenance goes off, the data is as before, the lock is free again', async () => {
    const storage = await provisionStorage();
    cleanups.push(storage.cleanup);
    const cwd = mkdtempSync(join(tmpdir(), 'platform-restore-crash-'));
    cleanups.push(async () => rmSync(cwd, { recursive: true, force: true }));
    const dataDir = (storage.tree as { storage: { data_dir: string } }).storage.data_dir;
    const env = cliEnv(storage.tree, {
      PLATFORM_ADMIN_PASSWORD: ADMIN_PASSWORD,
      PLATFORM__TASKS__LEASE_SECONDS: '1',
      PLATFORM__BACKUPS__LOCK_LEASE_SECONDS: '0.5',
    });
    let child: CliProcess | undefined = startCli(['serve'], { cwd, env });
    cleanups.push(async () => {
      child?.child.kill('SIGKILL');
    });
    const [, base] = await child.waitForLine(/listening on (http:\/\/\S+)\n/);
    const token = (
      await api(base!, 'POST', '/api/v1/auth/login', {
        body: { username: 'admin', password: ADMIN_PASSWORD },
      })
    ).data.data.access_token as string;
    const user = (username: string) =>
      api(base!, 'POST', '/api/v1/admin/users', {
        token,
        body: { username, email: `${username}@example.test`, password: 'user-password-1', roles: ['user'] },
      });
    expect((await user('before-backup')).status).toBe(201);
    const backup = await api(base!, 'POST', '/api/v1/backup', { token, body: {} });
    expect(backup.status).toBe(201);
    const backupId = backup.data.data.backup_id as string;
    // The archive is written in the background: the restore waits for it to be completed.
    expect(
      await eventually(async () => {
        const list = await api(base!, 'GET', '/api/v1/backup', { token });
        return list.data.data.backups.find((b: { id: string }) => b.id === backupId)?.status === 'completed';
      }, 30_000),
    ).toBe(true);
    expect((await user('after-backup')).status).toBe(201);
    // Incompressible plugin files written after the backup make the safety backup slow enough to die in.
    mkdirSync(join(dataDir, 'plugins', 'bulk'), { recursive: true });
    writeFileSync(join(dataDir, 'plugins', 'bulk', 'blob.bin'), randomBytes(24 * 1024 * 1024));

    const started = await api(base!, 'POST', `/api/v1/backup/${backupId}/restore`, {
      token,
      body: { confirm: true },
    });
    expect(started.status, JSON.stringify(started.data)).toBe(202);
    const restoreId = started.data.data.restore_id as string;
    const inSafetyBackup = async () => {
      const task = (await api(base!, 'GET', `/api/v1/tasks/${restoreId}`, { token })).data?.data;
      return task?.details?.steps?.some(
        (s: { name: string; status: string }) => s.name === 'safety_backup' && s.status === 'running',
      );
    };
    expect(await eventually(inSafetyBackup, 20_000)).toBe(true);
    const during = await api(base!, 'GET', '/api/v1/admin/system/maintenance', { token });
    expect(during.data.data).toMatchObject({ enabled: true, message: expect.stringContaining(backupId) });
    child.child.kill('SIGKILL');
    await child.exited;
    child = undefined;

    const t = await startPlatform(LEASES, { storage: storage.tree });
    cleanups.push(() => t.close());
    const admin = await t.adminToken();
    const off = async () => (await maintenanceOf(t, admin)).enabled === false;
    expect(await eventually(off, 15_000), JSON.stringify(await maintenanceOf(t, admin))).toBe(true);
    expect((await t.request('GET', '/api/v1/auth/me', { token: admin })).statusCode).toBe(200);

    // The restore never reached its database step: every row is the live one, none from the backup.
    const users = await t.request('GET', '/api/v1/admin/users?per_page=100', { token: admin });
    const names = users.data.data.users.map((u: { username: string }) => u.username);
    expect(names).toEqual(expect.arrayContaining(['admin', 'before-backup', 'after-backup']));
    const task = (await t.request('GET', `/api/v1/tasks/${restoreId}`, { token: admin })).data.data;
    expect(task).toMatchObject({ status: 'failed', error: 'interrupted' });
    // The recovery turns maintenance off first and writes its audit entry right after: wait for the entry.
    const interrupted = async () =>
      (await restoreAudit(t, admin, backupId)).find((e) => e.details['status'] === 'interrupted');
    expect(await eventually(async () => (await interrupted()) !== undefined, 15_000)).toBe(true);
    expect(await interrupted()).toMatchObject({
      admin_user: 'system',
      details: { restore_id: restoreId, maintenance: 'restored', maintenance_enabled: false },
    });
    // The safety backup the process was writing is settled, and the dead process's lock has expired.
    const list = (await t.request('GET', '/api/v1/backup', { token: admin })).data.data.backups;
    expect(list.find((b: { name: string }) => b.name === `before restore ${restoreId}`)).toMatchObject({
      status: 'failed',
    });
    // Within its lease (LEASES: half a second, from the dead process's last renewal): a loaded host may get here first.
    let next = { statusCode: 0, body: '' };
    const taken = async () => {
      next = await t.request('POST', '/api/v1/backup', {
        token: admin,
        body: { include: ['configuration'] },
      });
      return next.statusCode !== 409;
    };
    expect(await eventually(taken, 5_000)).toBe(true);
    expect(next.statusCode, next.body).toBe(201);
  });

  it("leaves maintenance alone when it is no longer the restore's own", async () => {
    const t = await startPlatform(LEASES);
    cleanups.push(() => t.close());
    const admin = await t.adminToken();
    // What a restore leaves when its process dies: its marker (written through the store the restore uses)…
    const { systemState, maintenance } = t.platform.context;
    await writeRestoreMarker(systemState, {
      restore_id: 'rst_gone',
      backup_id: 'bkp_gone',
      started_at: new Date().toISOString(),
      actor: 'admin',
      message: 'Restoring backup bkp_gone; the platform is back shortly',
      previous: maintenance.current(),
    });
    // …after which an administrator put maintenance on for work of their own.
    const own = await t.request('POST', '/api/v1/admin/system/maintenance', {
      token: admin,
      body: { enabled: true, message: 'disk replacement' },
    });
    expect(own.statusCode).toBe(200);
    const settled = async () =>
      (await restoreAudit(t, admin, 'bkp_gone')).some((e) => e.details['status'] === 'interrupted');
    expect(await eventually(settled, 10_000)).toBe(true);
    expect(await maintenanceOf(t, admin)).toMatchObject({ enabled: true, message: 'disk replacement' });
    expect((await restoreAudit(t, admin, 'bkp_gone'))[0]?.details).toMatchObject({
      restore_id: 'rst_gone',
      maintenance: 'unchanged',
    });
  });
  it('puts the plugin folder back when the restore died between setting it aside and swapping one in', async () => {
    const t = await startPlatform(LEASES);
    cleanups.push(() => t.close());
    const admin = await t.adminToken();
    const { systemState, maintenance } = t.platform.context;
    const cfg = t.platform.context.cfg();
    // The swap's first step done, its second never: the live folder is aside and there is none in its place.
    const live = pluginFolder(cfg);
    mkdirSync(live, { recursive: true });
    writeFileSync(join(live, 'kept.txt'), 'installed package');
    renameSync(live, pluginFolderAside(cfg, 'rst_swap'));
    await writeRestoreMarker(systemState, {
      restore_id: 'rst_swap',
      backup_id: 'bkp_swap',
      started_at: new Date().toISOString(),
      actor: 'admin',
      message: 'Restoring backup bkp_swap; the platform is back shortly',
      previous: maintenance.current(),
    });
    const settled = async () =>
      (await restoreAudit(t, admin, 'bkp_swap')).some((e) => e.details['status'] === 'interrupted');
    expect(await eventually(settled, 10_000)).toBe(true);
    expect((await restoreAudit(t, admin, 'bkp_swap'))[0]?.details).toMatchObject({
      plugin_folder: 'put back',
    });
    expect(readFileSync(join(live, 'kept.txt'), 'utf8')).toBe('installed package');
    expect(existsSync(pluginFolderAside(cfg, 'rst_swap'))).toBe(false);
  });
});
