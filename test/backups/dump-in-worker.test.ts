import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSqliteSnapshot } from '../../src/backups/database-snapshot.js';
import { dumpInWorker } from '../../src/backups/dump-in-worker.js';
import { dumpSnapshot } from '../../src/backups/snapshot-dump.js';
import { SqliteDriver } from '../../src/storage/sqlite/better-sqlite3.js';

// The worker thread that dumps a SQLite file's snapshot: the same files as the dump on the loop, its errors
// with the same message, and an abort that stops it.
describe('the table dump in a worker thread', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'dump-worker-'));
  const file = join(dir, 'db.sqlite');
  const wants = { database: true, configuration: true };

  beforeAll(() => {
    const db = new SqliteDriver(file);
    db.pragma('journal_mode = wal');
    db.exec(`create table platform_migrations (name text primary key, executed_at text);
      insert into platform_migrations values ('0001-core', 'x');
      create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
      insert into config_overrides values ('a.b', '1', 't', 'u');
      create table things (id integer primary key, body text);
      with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
      insert into things select i, 'thing ' || i from n;`);
    db.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the same files and answers the same result as the dump on this thread', async () => {
    let progressed = 0;
    const inWorker = await dumpInWorker(file, join(dir, 'w'), wants, {
      onRows: (rows, estimate) => {
        progressed = rows;
        expect(estimate).toBeGreaterThanOrEqual(20_000);
      },
    });
    const here = await readSqliteSnapshot(file, (db) => dumpSnapshot(db, 'sqlite', join(dir, 'h'), wants));
    expect(inWorker).toEqual(here);
    expect(progressed).toBe(20_000);
    expect(inWorker.schemaVersion).toEqual(['0001-core']);
    expect(inWorker.configOverrides).toEqual([{ key: 'a.b', value: '1', updated_at: 't', updated_by: 'u' }]);
    expect(inWorker.tables?.['things']?.rows).toBe(20_000);
    expect(readFileSync(join(dir, 'w/database/things.jsonl'))).toEqual(
      readFileSync(join(dir, 'h/database/things.jsonl')),
    );
  });

  it('fails with the error the dump on this thread meets, message and code', async () => {
    const blocker = join(dir, 'not-a-folder');
    writeFileSync(blocker, '');
    const here = await readSqliteSnapshot(file, (db) => dumpSnapshot(db, 'sqlite', blocker, wants)).catch(
      (e: NodeJS.ErrnoException) => e,
    );
    const inWorker = await dumpInWorker(file, blocker, wants).catch((e: NodeJS.ErrnoException) => e);
    expect(inWorker).toBeInstanceOf(Error);
    expect((inWorker as Error).message).toBe((here as Error).message);
    expect((inWorker as NodeJS.ErrnoException).code).toBe((here as NodeJS.ErrnoException).code);
  });

  it('stops the worker when aborted, with the signal reason', async () => {
    const controller = new AbortController();
    const reason = new Error('task cancelled');
    const started = Date.now();
    const failed = await dumpInWorker(file, join(dir, 'a'), wants, {
      signal: controller.signal,
      onRows: () => controller.abort(reason),
    }).catch((e: unknown) => e);
    expect(failed).toBe(reason);
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(dumpInWorker(file, join(dir, 'b'), wants, { signal: controller.signal })).rejects.toBe(
      reason,
    );
  });

  it('dumps 500 rows of 256 KB (events at the payload limit) within its capped heap, in pages sized by bytes', async () => {
    const heavy = join(dir, 'heavy.sqlite');
    const db = new SqliteDriver(heavy);
    db.pragma('journal_mode = wal');
    // 128 MB of text in all: in pages of 500 rows, one page would be more than the worker's whole heap.
    db.exec(`create table platform_migrations (name text primary key);
      create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
      create table payloads (id integer primary key, body text);
      with recursive n(i) as (select 1 union all select i + 1 from n where i < 500)
      insert into payloads select i, printf('%.*c', 262144, 'x') from n;`);
    db.close();
    const dump = await dumpInWorker(heavy, join(dir, 'heavy'), wants);
    expect(dump.tables?.['payloads']?.rows).toBe(500);
    rmSync(heavy, { force: true });
  });
});
