import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { hookArchiveOpen } from './archive-open-hook.js';
import { backupFolder, backupWritten } from './backup-fixtures.js';

/**
 * While set, the backup folder is taken away (the staged files under its `.work/` with it) just as the archive is
 * about to be written, as an operator removing or remounting it during a backup would, and `replace` is put in its
 * place (a file: a folder that cannot be created again).
 */
const removal: { folder?: string | undefined; replace?: string | undefined } = {};
let unhook: (() => void) | undefined;

/** Errors thrown out of the platform's reach: without a handler, each would have stopped its process. */
const uncaught: string[] = [];
const recordUncaught = (err: Error) => uncaught.push(err.message);

describe('a backup whose folder is removed while it is written', () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    unhook = hookArchiveOpen({
      beforeOpen: () => {
        if (!removal.folder) return;
        rmSync(removal.folder, { recursive: true, force: true });
        if (removal.replace !== undefined) writeFileSync(removal.folder, removal.replace);
        removal.folder = undefined;
      },
    });
    process.on('uncaughtException', recordUncaught);
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    removal.folder = undefined;
    unhook?.();
    process.off('uncaughtException', recordUncaught);
    await t?.close();
  });

  const backup = async () => {
    const res = await t.request('POST', '/api/v1/admin/backup', { token: admin, body: {} });
    expect(res.statusCode, res.body).toBe(201);
    return backupWritten(t, admin, res.data.data.backup.id);
  };

  it('ends the record failed with the cause (no unhandled error), and the next backup writes the folder anew', async () => {
    removal.folder = backupFolder(t);
    const failed = await backup();
    expect(removal.folder).toBeUndefined(); // the folder was taken away during this backup
    expect(failed).toMatchObject({ status: 'failed', sha256: null, size_bytes: 0 });
    expect(failed.error).toContain('the backup folder was removed while the backup was written');

    const next = await backup();
    expect(next.status, next.error).toBe('completed');
    expect(uncaught).toEqual([]);
    expect(readdirSync(backupFolder(t))).toContain(next.download_url.split('/').at(-2) + '.tar.gz');
  });

  it('fails cleanly when a file stands where the folder should be created again', async () => {
    removal.folder = backupFolder(t);
    removal.replace = 'not a folder';
    const failed = await backup();
    expect(removal.folder).toBeUndefined();
    expect(failed.status).toBe('failed');
    expect(failed.error).toContain('the backup folder was removed while the backup was written');
    removal.replace = undefined;
    rmSync(backupFolder(t), { force: true });
    expect(existsSync(backupFolder(t))).toBe(false);
    // The folder is created again by the next backup.
    expect((await backup()).status).toBe('completed');
    expect(uncaught).toEqual([]);
  });
});
