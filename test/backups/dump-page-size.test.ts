import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dumpInWorker } from '../../src/backups/dump-in-worker.js';
import { backend } from '../helpers/backends.js';
import { createDumpSource, type DumpSource } from './dump-sources.js';

// The dump reads a table's first page as one row, and sizes the next pages from it: rows of megabytes are
// read a few at a time. Before, the first page read 50 rows whatever they weighed: 40 rows of 3 MB were 120 MB
// of rows, and as much JSON text, at once — more than the dump worker's heap holds (it ran out of memory).
// On SQLite and on PostgreSQL, whose dump runs in the same worker.
describe(`the dump of a table of large rows (${backend})`, { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'dump-page-size-'));
  const ROWS = 40;
  const ROW_CHARS = 3 * 1024 * 1024;
  let store: DumpSource;

  beforeAll(async () => {
    const schema = `create table platform_migrations (name text primary key, executed_at text);
      insert into platform_migrations values ('0001-core', 'x');
      create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
      create table big (id integer primary key, body text);`;
    store = await createDumpSource(dir, 'db', {
      sqlite: `${schema}
        with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ROWS})
        insert into big select i, hex(randomblob(${ROW_CHARS / 2})) from n;`,
      // 3 MB of hex digits a row (md5's 32 repeated: what PostgreSQL stores compressed, the dump reads whole).
      postgres: `${schema}
        insert into big select i, repeat(md5(i::text), ${ROW_CHARS / 32}) from generate_series(1, ${ROWS}) as i;`,
    });
  });
  afterAll(async () => {
    await store?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`dumps ${ROWS} rows of 3 MB in the worker, its first page a single row`, async () => {
    const dump = await dumpInWorker(store.source, join(dir, 'out'), { database: true, configuration: false });
    expect(dump.tables?.['big']?.rows).toBe(ROWS);
    // Each line is the row's JSON: its 3 MB of text and a few characters around it.
    expect(dump.tables?.['big']?.file.bytes).toBeGreaterThan(ROWS * ROW_CHARS);
  });

  it('dumps rows of 16 MB (an event at the largest payload limit) within the worker heap, one at a time', async () => {
    const schema = `create table platform_migrations (name text primary key, executed_at text);
      create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
      create table huge (id integer primary key, body text);`;
    const huge = await createDumpSource(dir, 'huge', {
      sqlite: `${schema}
        with recursive n(i) as (select 1 union all select i + 1 from n where i < 3)
        insert into huge select i, hex(randomblob(8 * 1024 * 1024)) from n;`,
      postgres: `${schema}
        insert into huge select i, repeat(md5(i::text), 16 * 1024 * 1024 / 32) from generate_series(1, 3) as i;`,
    });
    try {
      const dump = await dumpInWorker(huge.source, join(dir, 'huge'), {
        database: true,
        configuration: false,
      });
      expect(dump.tables?.['huge']?.rows).toBe(3);
    } finally {
      await huge.drop();
    }
  });
});
