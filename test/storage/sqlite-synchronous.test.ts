import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/database.js';
import { createSqliteDatabase } from '../../src/storage/sqlite/sqlite-database.js';
import type { Tables } from '../../src/storage/tables.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// How SQLite commits reach the disk, as the database connection itself reports it. SQLite only: the cluster
// project leaves this file out (vitest.config.ts).
describe('SQLite durability setting', { timeout: 20_000 }, () => {
  let t: TestPlatform | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const reported = async (platform: TestPlatform) => {
    const admin = await platform.adminToken();
    const service = await platform.request('GET', '/api/v1/services/database', { token: admin });
    const config = await platform.request('GET', '/api/v1/config', { token: admin });
    return {
      synchronous: service.data.data.config.synchronous,
      configured: config.data.data.database.sqlite_synchronous,
    };
  };

  it('syncs every commit to disk by default, so an answered write survives a power loss', async () => {
    t = await startPlatform();
    expect(await reported(t)).toEqual({ synchronous: 'full', configured: 'full' });
    const emit = await t.request('POST', '/api/v1/events', {
      token: await t.adminToken(),
      body: { event_type: 'durability.check', data: {} },
    });
    expect(emit.statusCode).toBe(201);
  });

  it('syncs at checkpoints only when an operator chooses normal', async () => {
    t = await startPlatform({ database: { sqlite_synchronous: 'normal' } });
    expect(await reported(t)).toEqual({ synchronous: 'normal', configured: 'normal' });
  });
});

// The webhook dispatcher's claims and results commit without a sync (a power loss makes them be done again);
// everything else, emits first, still commits with one.
describe('SQLite transactions that skip the sync', () => {
  let dir: string;
  let database: Database;
  const level = async (db: Kysely<Tables>) =>
    (await sql<{ synchronous: number }>`pragma synchronous`.execute(db)).rows[0]!.synchronous;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'unsynced-'));
    database = createSqliteDatabase(join(dir, 'test.db'));
  });
  afterEach(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits NORMAL inside, and leaves the connection FULL after, also when the work fails', async () => {
    await sql`create table t (x integer)`.execute(database.db);
    const inside = await database.unsyncedTransaction!(async (trx) => {
      await sql`insert into t values (1)`.execute(trx);
      return level(trx);
    });
    expect(inside).toBe(1);
    expect(database.synchronous!()).toBe('full');
    await expect(
      database.unsyncedTransaction!(async (trx) => {
        await sql`insert into t values (2)`.execute(trx);
        throw new Error('the work failed');
      }),
    ).rejects.toThrow('the work failed');
    expect(database.synchronous!()).toBe('full');
    const rows = await sql<{ x: number }>`select x from t`.execute(database.db);
    expect(rows.rows.map((r) => r.x)).toEqual([1]);
    // A transaction of anyone else meanwhile commits FULL.
    expect(await database.db.transaction().execute((trx) => level(trx))).toBe(2);
  });

  it('is not offered when every commit is NORMAL anyway', async () => {
    const normal = createSqliteDatabase(join(dir, 'normal.db'), { synchronous: 'normal' });
    expect(normal.unsyncedTransaction).toBeUndefined();
    await normal.close();
  });
});
