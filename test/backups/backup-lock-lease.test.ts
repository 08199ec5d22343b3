import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/backends.js';
import { eventually } from '../helpers/eventually.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupWritten } from './backup-fixtures.js';

/**
 * A short lease, so "several lease periods" pass within one backup of some tens of megabytes; renewed every
 * third of it, it outlasts a pause of the test process's thread of up to 330 ms (three test files share two
 * cores here).
 */
const LEASE_SECONDS = 0.5;
const LEASE_MS = LEASE_SECONDS * 1000;

describe('the backup lock is a renewed lease', () => {
  let t: TestPlatform;
  let admin: string;
  let bulk: string;

  beforeAll(async () => {
    t = await startPlatform({ backups: { lock_lease_seconds: LEASE_SECONDS } });
    admin = await t.adminToken();
    bulk = join(t.platform.context.cfg().storage.data_dir, 'plugins', 'bulk');
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers BACKUP_IN_PROGRESS while a long backup runs past several lease periods, then frees the lock', async () => {
    // Incompressible bytes in the plugin folder: packing them keeps the backup busy for a couple of seconds.
    mkdirSync(bulk, { recursive: true });
    writeFileSync(join(bulk, 'blob.bin'), randomBytes(96 * 1024 * 1024));
    // In cluster mode the refusals come from a second instance too, which sees the lock only through Redis.
    const other = backend === 'cluster' ? await startPlatform({}, { storage: t.storage }) : undefined;
    try {
      const otherAdmin = other ? (await other.login('admin', ADMIN_PASSWORD)).access : undefined;
      let settled = false;
      // Answered at once; the lock is held by the task writing the archive until it ends.
      const accepted = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
      expect(accepted.statusCode, accepted.body).toBe(201);
      const long = backupWritten(t, admin, accepted.data.data.backup_id).finally(() => {
        settled = true;
      });
      const running = async () =>
        (await t.request('GET', '/api/v1/backup', { token: admin })).data.data.backups.some(
          (b: { status: string }) => b.status === 'running',
        );
      expect(await eventually(running, 10_000)).toBe(true);
      const started = performance.now();
      const refusals: number[] = [];
      let lastRefusal = started;
      while (performance.now() - started < 4 * LEASE_MS && !settled) {
        const [here, there] = await Promise.all([
          t.request('POST', '/api/v1/backup', { token: admin, body: {} }),
          other?.request('POST', '/api/v1/backup', { token: otherAdmin!, body: {} }),
        ]);
        // A request that crossed the backup's end may have found the lock free: not a refusal to count.
        if (settled) break;
        lastRefusal = performance.now();
        for (const res of [here, there]) {
          if (!res) continue;
          expect(res.statusCode, res.body).toBe(409);
          expect(res.data.error.code).toBe('BACKUP_IN_PROGRESS');
          refusals.push(res.statusCode);
        }
        await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 3));
      }
      // Every refusal above came while the one backup ran, across four lease periods.
      expect(
        lastRefusal - started,
        'the backup ended before four lease periods; make it bigger',
      ).toBeGreaterThanOrEqual(3 * LEASE_MS);
      expect(refusals.length).toBeGreaterThanOrEqual(4);
      const done = await long;
      expect(done.status).toBe('completed');
      const next = await t.request('POST', '/api/v1/backup', {
        token: admin,
        body: { include: ['configuration'] },
      });
      expect(next.statusCode, next.body).toBe(201);
      expect((await backupWritten(t, admin, next.data.data.backup_id)).status).toBe('completed');
    } finally {
      await other?.close();
      rmSync(bulk, { recursive: true, force: true });
    }
  });

  it('frees the lock one lease after its holder stopped renewing it, as when that instance died', async () => {
    // What a dead instance leaves: the lease it took and never renewed (the same lock the service takes).
    // One second, so that the refusal below comes within it even on a busy machine.
    const ABANDONED_MS = 1000;
    const abandoned = await t.platform.context.shared.tryLease('backups', ABANDONED_MS);
    expect(abandoned).toBeDefined();
    const refused = await t.request('POST', '/api/v1/backup', {
      token: admin,
      body: { include: ['configuration'] },
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.data.error.code).toBe('BACKUP_IN_PROGRESS');
    const created = async () =>
      (await t.request('POST', '/api/v1/backup', { token: admin, body: { include: ['configuration'] } }))
        .statusCode === 201;
    const started = performance.now();
    expect(await eventually(created, 10 * ABANDONED_MS)).toBe(true);
    // One lease and the retries' spacing; more on a loaded machine, never the 10 leases waited for above.
    expect(performance.now() - started).toBeLessThan(5 * ABANDONED_MS);
  });
});
