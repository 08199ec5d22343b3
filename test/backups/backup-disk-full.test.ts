import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { hookArchiveOpen } from './archive-open-hook.js';
import { backupFolder, backupWritten, settledTask } from './backup-fixtures.js';

/** While set, writing an archive (`….partial`) fails as a full disk makes it fail: ENOSPC. */
const disk = { full: false };
let unhook: (() => void) | undefined;

describe('a backup on a full disk', () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    unhook = hookArchiveOpen({ diskFull: () => disk.full });
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    disk.full = false;
    unhook?.();
    await t.close();
  });

  it('fails the backup with the cause named (not a 500), and leaves a failed row and no file', async () => {
    disk.full = true;
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    // Accepted at once: the archive is written by the backup's task, which meets the full disk.
    expect(res.statusCode, res.body).toBe(201);
    const id = res.data.data.backup_id;
    const task = await settledTask(t, admin, id);
    disk.full = false;
    expect(task.status).toBe('failed');
    expect(task.error).toContain('no space left');
    const list = await t.request('GET', '/api/v1/admin/backup', { token: admin });
    expect(list.data.data.backups).toHaveLength(1);
    expect(list.data.data.backups[0]).toMatchObject({ id, status: 'failed' });
    expect(list.data.data.backups[0].error).toContain('no space left');
    expect(readdirSync(backupFolder(t)).filter((f) => !f.startsWith('.'))).toEqual([]);

    // Once there is room, the next backup is written.
    const again = await t.request('POST', '/api/v1/admin/backup', { token: admin, body: {} });
    expect(again.statusCode, again.body).toBe(201);
    expect((await backupWritten(t, admin, again.data.data.backup.id)).status).toBe('completed');
  });
});
