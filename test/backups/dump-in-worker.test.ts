import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOwnSnapshot } from '../../src/backups/database-snapshot.js';
import { dumpInWorker } from '../../src/backups/dump-in-worker.js';
import { dumpSnapshot } from '../../src/backups/snapshot-dump.js';
import { backend } from '../helpers/backends.js';
import { eventually } from '../helpers/eventually.js';
import { connectionsTo, createDumpSource, type DumpSource } from './dump-sources.js';

// The worker thread that dumps a database's snapshot, from a SQLite file (embedded project) or the PostgreSQL
// server (cluster project) on a connection of its own: the same files as the dump on this thread, its errors
// with the same message, an abort that stops it, and on PostgreSQL its connection opened with the URL's
// settings and closed at the end, on failure and on abort.
describe(`the table dump in a worker thread (${backend})`, { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'dump-worker-'));
  const wants = { database: true, configuration: true };
  // The application name is one of the URL's connection settings: the worker's connection must carry it.
  const APP = 'platform-dump-test';
  let store: DumpSource;

  beforeAll(async () => {
    store = await createDumpSource(
      dir,
      'db',
      {
        sqlite: `create table platform_migrations (name text primary key, executed_at text);
          insert into platform_migrations values ('0001-core', 'x');
          create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
          insert into config_overrides values ('a.b', '1', 't', 'u');
          create table things (id integer primary key, body text);
          with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
          insert into things select i, 'thing ' || i from n;`,
        postgres: `create table platform_migrations (name text primary key, executed_at text);
          insert into platform_migrations values ('0001-core', 'x');
          create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
          insert into config_overrides values ('a.b', '1', 't', 'u');
          create table things (id bigint primary key, body text, at timestamptz, flag boolean, raw bytea);
          insert into things select i, 'thing ' || i, timestamptz '2026-01-01T00:00:00Z' + i * interval '1 s',
            i % 2 = 0, case when i % 1000 = 0 then decode('00ff', 'hex') end
          from generate_series(1, 20000) as i;
          analyze things;`,
      },
      `application_name=${APP}`,
    );
  });
  afterAll(async () => {
    await store?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** On PostgreSQL: no connection of the dump is left open to the store. */
  const noConnectionLeft = async () => {
    if (!store.database) return;
    const database = store.database;
    expect(await eventually(async () => (await connectionsTo(database)).length === 0)).toBe(true);
  };

  it('writes the same files and answers the same result as the dump on this thread', async () => {
    let progressed = 0;
    const inWorker = await dumpInWorker(store.source, join(dir, 'w'), wants, {
      onRows: (rows, estimate) => {
        progressed = rows;
        expect(estimate).toBeGreaterThanOrEqual(backend === 'sqlite' ? 20_000 : 19_000);
      },
    });
    const here = await readOwnSnapshot(store.source, (db, dialect) =>
      dumpSnapshot(db, dialect, join(dir, 'h'), wants),
    );
    expect(inWorker).toEqual(here);
    expect(progressed).toBe(20_000);
    expect(inWorker.schemaVersion).toEqual(['0001-core']);
    expect(inWorker.configOverrides).toEqual([{ key: 'a.b', value: '1', updated_at: 't', updated_by: 'u' }]);
    expect(inWorker.tables?.['things']?.rows).toBe(20_000);
    const things = readFileSync(join(dir, 'w/database/things.jsonl'));
    expect(things).toEqual(readFileSync(join(dir, 'h/database/things.jsonl')));
    if (backend === 'cluster') {
      // PostgreSQL's values in the dump's own representation: numbers, ISO text, 0/1, tagged bytes.
      const first = JSON.parse(things.toString('utf8').split('\n')[999] ?? '{}');
      expect(first).toEqual({
        id: 1000,
        body: 'thing 1000',
        at: '2026-01-01T00:16:40.000Z',
        flag: true,
        raw: { $base64: 'AP8=' },
      });
    }
    await noConnectionLeft();
  });

  // PostgreSQL: the worker's connection is its own, opened with the URL's settings, closed at the end.
  if (backend === 'cluster') {
    it("opens its PostgreSQL connection with the URL's settings, one of its own, and closes it at the end", async () => {
      const database = store.database ?? '';
      const during: string[][] = [];
      let pending: Promise<void> | undefined;
      await dumpInWorker(store.source, join(dir, 'settings'), wants, {
        onRows: () => {
          pending ??= connectionsTo(database).then((c) => {
            during.push(c);
          });
        },
      });
      await pending;
      // While the worker dumped, this thread had no connection to the store: the one open was the worker's.
      expect(during).toEqual([[APP]]);
      await noConnectionLeft();
    });

    it('fails with the server’s error when PostgreSQL refuses the connection', async () => {
      const url = new URL(store.source.dialect === 'postgres' ? store.source.url : '');
      url.pathname = '/platform_test_no_such_database';
      const source = { dialect: 'postgres' as const, url: url.toString() };
      const failed = await dumpInWorker(source, join(dir, 'x'), wants).catch((e: NodeJS.ErrnoException) => e);
      expect(failed).toBeInstanceOf(Error);
      expect((failed as Error).message).toMatch(/platform_test_no_such_database/);
      // PostgreSQL's code for an unknown database.
      expect((failed as NodeJS.ErrnoException).code).toBe('3D000');
    });
  }

  it('fails with the error the dump on this thread meets, message and code', async () => {
    const blocker = join(dir, 'not-a-folder');
    writeFileSync(blocker, '');
    const here = await readOwnSnapshot(store.source, (db, dialect) =>
      dumpSnapshot(db, dialect, blocker, wants),
    ).catch((e: NodeJS.ErrnoException) => e);
    const inWorker = await dumpInWorker(store.source, blocker, wants).catch((e: NodeJS.ErrnoException) => e);
    expect(inWorker).toBeInstanceOf(Error);
    expect((inWorker as Error).message).toBe((here as Error).message);
    expect((inWorker as NodeJS.ErrnoException).code).toBe((here as NodeJS.ErrnoException).code);
    await noConnectionLeft();
  });

  it('stops the worker when aborted, with the signal reason', async () => {
    const controller = new AbortController();
    const reason = new Error('task cancelled');
    const started = Date.now();
    const failed = await dumpInWorker(store.source, join(dir, 'a'), wants, {
      signal: controller.signal,
      onRows: () => controller.abort(reason),
    }).catch((e: unknown) => e);
    expect(failed).toBe(reason);
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(
      dumpInWorker(store.source, join(dir, 'b'), wants, { signal: controller.signal }),
    ).rejects.toBe(reason);
    await noConnectionLeft();
  });

  it('dumps 500 rows of 256 KB (events at the payload limit) within its capped heap, in pages sized by bytes', async () => {
    // 128 MB of text in all: in pages of 500 rows, one page would be more than the worker's whole heap.
    const heavy = await createDumpSource(dir, 'heavy', {
      sqlite: `create table platform_migrations (name text primary key);
        create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
        create table payloads (id integer primary key, body text);
        with recursive n(i) as (select 1 union all select i + 1 from n where i < 500)
        insert into payloads select i, printf('%.*c', 262144, 'x') from n;`,
      postgres: `create table platform_migrations (name text primary key);
        create table config_overrides (key text primary key, value text, updated_at text, updated_by text);
        create table payloads (id integer primary key, body text);
        insert into payloads select i, repeat('x', 262144) from generate_series(1, 500) as i;`,
    });
    try {
      const dump = await dumpInWorker(heavy.source, join(dir, 'heavy'), wants);
      expect(dump.tables?.['payloads']?.rows).toBe(500);
    } finally {
      await heavy.drop();
    }
  });
});
