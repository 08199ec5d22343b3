import fs, { readdirSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupFolder } from './backup-fixtures.js';

/**
 * While set, writing an archive (`….partial`) fails as a full disk makes it fail: ENOSPC. The platform's modules
 * import `createWriteStream` by name; `syncBuiltinESMExports` makes that binding follow the patched `fs`.
 */
const disk = { full: false };
const original = fs.createWriteStream;
fs.createWriteStream = ((path: string, options?: Parameters<typeof original>[1]) => {
  if (!disk.full || !String(path).endsWith('.partial')) return original(path, options);
  fs.writeFileSync(path, ''); // the file exists, as a real one does once opened
  return new Writable({
    write(_chunk, _encoding, done) {
      done(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
    },
  });
}) as typeof fs.createWriteStream;

describe('a backup on a full disk', () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    syncBuiltinESMExports();
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    disk.full = false;
    fs.createWriteStream = original;
    syncBuiltinESMExports();
    await t.close();
  });

  it('answers 503 with Retry-After naming the cause (not a 500), and leaves a failed row and no file', async () => {
    disk.full = true;
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    disk.full = false;
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.data.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(res.data.error.message).toContain('no space left');
    const list = await t.request('GET', '/api/v1/backup', { token: admin });
    expect(list.data.data.backups.map((b: { status: string }) => b.status)).toEqual(['failed']);
    expect(readdirSync(backupFolder(t)).filter((f) => !f.startsWith('.'))).toEqual([]);

    // Once there is room, the next backup is written.
    const again = await t.request('POST', '/api/v1/admin/backup', { token: admin, body: {} });
    expect(again.statusCode, again.body).toBe(201);
  });
});
