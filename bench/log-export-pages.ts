/**
 * The backup's export of the log store, page by page, two ways on one SQLite log store of N entries: pages by
 * number (the log search's `query`: a count and an OFFSET per page, as the export read before) and by keyset
 * (`exportPage`, what it reads now). Prints each way's total and slowest page.
 *
 *   npx tsx bench/log-export-pages.ts [entries, default 300000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogEntriesTable } from '../src/logs/log-tables.js';
import { createSqliteLogStore } from '../src/logs/sqlite/sqlite-log-store.js';
import { SqliteDriver } from '../src/storage/sqlite/better-sqlite3.js';

const entries = Number(process.argv[2] ?? 300_000);
const PAGE = 1000;
const dir = mkdtempSync(join(tmpdir(), 'log-export-bench-'));
const store = await createSqliteLogStore(dir);
try {
  const db = new SqliteDriver(join(dir, 'logs.db'));
  db.prepare(
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
     insert into log_entries (id, timestamp, level, level_value, component, message, metadata)
     select 'log_' || i, strftime('%Y-%m-%dT%H:%M:%fZ', 1767225600 - i / 10.0, 'unixepoch'), 'INFO', 30,
       'bench', 'message number ' || i, '{}' from n`,
  ).run(entries);
  db.exec('analyze');
  db.close();
  const until = new Date().toISOString();
  const walk = async (
    name: string,
    next: (last: LogEntriesTable | undefined, page: number) => Promise<LogEntriesTable[]>,
  ) => {
    const started = performance.now();
    let rows = 0;
    let slowest = 0;
    let last: LogEntriesTable | undefined;
    for (let page = 1; ; page++) {
      const t = performance.now();
      const batch = await next(last, page);
      slowest = Math.max(slowest, performance.now() - t);
      rows += batch.length;
      last = batch.at(-1);
      if (batch.length < PAGE) break;
    }
    const total = Math.round(performance.now() - started);
    console.log(`${name}: ${rows} entries in ${total} ms, slowest page ${Math.round(slowest)} ms`);
  };
  await walk(
    'pages by number',
    async (_last, page) => (await store.query({ endTime: until, page, perPage: PAGE })).rows,
  );
  await walk('keyset pages', (last) => store.exportPage({ until, after: last, limit: PAGE }));
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
