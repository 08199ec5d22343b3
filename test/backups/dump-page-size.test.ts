import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dumpInWorker } from '../../src/backups/dump-in-worker.js';
import { SqliteDriver } from '../../src/storage/sqlite/better-sqlite3.js';

// The dump reads a table's first page as one row, and sizes the next pages from it: rows of megabytes are
// read a few at a time. Before, the first page read 50 rows whatever they weighed: 40 rows of 3 MB were 120 MB
// of rows, and as much JSON text, at once — more than the dump worker's heap holds (it ran out of memory).
describe('the dump of a table of large rows', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'dump-page-size-'));
  const file = join(dir, 'db.sqlite');
  const ROWS = 40;
  const ROW_CHARS = 3 * 1024 * 1024;

  beforeAll(() => {
    const db = new SqliteDriver(file);
    db.pragma('journal_mode = wal');
    db.exec(`create table platform_migrations (name text primary key, executed_at text);
      insert into platform_migrations values ('0001-core', 'x');
      create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
      create table big (id integer primary key, body text);
      with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ROWS})
      insert into big select i, hex(randomblob(${ROW_CHARS / 2})) from n;`);
    db.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`dumps ${ROWS} rows of 3 MB in the worker, its first page a single row`, async () => {
    const dump = await dumpInWorker(file, join(dir, 'out'), { database: true, configuration: false });
    expect(dump.tables?.['big']?.rows).toBe(ROWS);
    // Each line is the row's JSON: its 3 MB of text and a few characters around it.
    expect(dump.tables?.['big']?.file.bytes).toBeGreaterThan(ROWS * ROW_CHARS);
  });

  it('dumps rows of 16 MB (an event at the largest payload limit) within the worker heap, one at a time', async () => {
    const huge = join(dir, 'huge.sqlite');
    const db = new SqliteDriver(huge);
    db.pragma('journal_mode = wal');
    db.exec(`create table platform_migrations (name text primary key, executed_at text);
      create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
      create table huge (id integer primary key, body text);
      with recursive n(i) as (select 1 union all select i + 1 from n where i < 3)
      insert into huge select i, hex(randomblob(8 * 1024 * 1024)) from n;`);
    db.close();
    const dump = await dumpInWorker(huge, join(dir, 'huge'), { database: true, configuration: false });
    expect(dump.tables?.['huge']?.rows).toBe(3);
  });
});
