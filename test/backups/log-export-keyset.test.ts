import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogStore } from '../../src/logs/create-log-store.js';
import type { KyselyLogStore } from '../../src/logs/kysely-log-store.js';
import type { LogStoreService } from '../../src/logs/log-store-service.js';
import type { LogEntriesTable } from '../../src/logs/log-tables.js';
import { SqliteDriver } from '../../src/storage/sqlite/better-sqlite3.js';
import { planOf } from '../helpers/query-plan.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { backupWritten, readArchive } from './backup-fixtures.js';

/** More than two of the export's internal pages (1000 entries); three entries share each timestamp. */
const ENTRIES = 2500;
/** Older entries for the plan of a deep page: a store large enough for its planner to choose as at scale. */
const BULK = 100_000;

function entry(i: number): LogEntriesTable {
  const at = new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 3) * 1000).toISOString();
  return {
    id: `log_export_${String(i).padStart(5, '0')}`,
    timestamp: at,
    level: 'INFO',
    level_value: 30,
    component: 'export-test',
    message: `entry ${i}`,
    request_id: null,
    user_id: null,
    ip_address: null,
    metadata: '{}',
  };
}

describe("the backup's export of the log store", { timeout: 120_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let store: KyselyLogStore;
  const entries = Array.from({ length: ENTRIES }, (_, i) => entry(i));

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    const logs = t.platform.context.registry.get('log_store') as LogStoreService;
    for (let i = 0; i < entries.length; i += 500) await logs.insert(entries.slice(i, i + 500));
    store = await createLogStore(t.platform.context.database, t.platform.context.cfg().storage.data_dir);
  });
  afterAll(async () => {
    await store?.close();
    await t?.close();
  });

  it('holds every entry once, newest first (by timestamp, then id), across its pages', async () => {
    const res = await t.request('POST', '/api/v1/admin/backup', {
      token: admin,
      body: { include_plugins: false, include_logs: true },
    });
    expect(res.statusCode, res.body).toBe(201);
    const b = res.data.data.backup;
    expect((await backupWritten(t, admin, b.id)).status).toBe('completed');
    const download = await t.request('GET', b.download_url, { token: admin });
    expect(download.statusCode).toBe(200);
    const files = await readArchive(download.rawPayload);
    const lines = files
      .get('logs/log_entries.jsonl')!
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as LogEntriesTable);
    const ours = lines.filter((l) => l.component === 'export-test');
    const expected = [...entries].sort((a, b) =>
      a.timestamp === b.timestamp ? b.id.localeCompare(a.id) : b.timestamp.localeCompare(a.timestamp),
    );
    expect(ours.map((l) => l.id)).toEqual(expected.map((e) => e.id));
    expect(ours[0]).toEqual(expected[0]);
    // The platform's own entries too, each once, in the same order.
    const keys = lines.map((l) => `${l.timestamp} ${l.id}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect([...keys].sort().reverse()).toEqual(keys);
  });

  it('reads a page deep in a large store through the timestamp index, from where the page before ended', async () => {
    await insertOlder(BULK);
    // Half way down the older entries: BULK / 2 newer ones above it.
    const deep = { timestamp: olderAt(BULK / 2), id: `log_bulk_${BULK / 2}` };
    const query = store
      .exportPageQuery({ until: new Date().toISOString(), after: deep, limit: 1000 })
      .compile();
    expect(query.sql).not.toMatch(/offset/i);
    const plan = (
      await planOf(t.platform.context.database, query, {
        sqliteFile: resolve(join(t.platform.context.cfg().storage.data_dir, 'logs.db')),
      })
    ).join('\n');
    if (t.platform.context.database.dialect === 'sqlite') {
      expect(plan).toMatch(/SEARCH log_entries USING INDEX log_entries_timestamp \(timestamp<\?\)/);
      // Only the ties of one timestamp are sorted, as they come: never the whole range.
      expect(plan).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
    } else {
      expect(plan).toMatch(/Index Scan Backward using log_entries_timestamp/);
      expect(plan).not.toMatch(/Seq Scan/);
      // At most the ties of one timestamp sorted as they come (Incremental Sort), never the whole range.
      expect(plan).not.toMatch(/^\s*(->\s*)?Sort\s+\(/m);
    }
    // The page: the 1000 older entries after `deep` (one a second, going back).
    const page = await store.exportPage({ until: new Date().toISOString(), after: deep, limit: 1000 });
    expect(page.map((e) => e.id)).toEqual(
      Array.from({ length: 1000 }, (_, k) => `log_bulk_${BULK / 2 + 1 + k}`),
    );
  });

  /** Entry i of the older ones: i seconds before 2026 (older as i grows). */
  const olderAt = (i: number) => new Date(Date.UTC(2026, 0, 1) - i * 1000).toISOString();

  /** `count` entries older than the others, written in one statement (then analyzed on PostgreSQL). */
  async function insertOlder(count: number): Promise<void> {
    const { database } = t.platform.context;
    const columns = 'id, timestamp, level, level_value, component, message, metadata';
    if (database.dialect === 'sqlite') {
      const db = new SqliteDriver(resolve(join(t.platform.context.cfg().storage.data_dir, 'logs.db')));
      try {
        db.pragma('busy_timeout = 5000');
        db.prepare(
          `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
           insert into log_entries (${columns})
           select 'log_bulk_' || i, strftime('%Y-%m-%dT%H:%M:%fZ', 1767225600 - i, 'unixepoch'), 'INFO', 30,
             'bulk', 'bulk ' || i, '{}' from n`,
        ).run(count);
        db.exec('analyze log_entries');
      } finally {
        db.close();
      }
      return;
    }
    await sql`insert into log_entries (${sql.raw(columns)})
      select 'log_bulk_' || i,
        to_char(to_timestamp(1767225600 - i) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'INFO', 30,
        'bulk', 'bulk ' || i, '{}'
      from generate_series(1, ${count}::int) as i`.execute(database.db);
    await sql`analyze log_entries`.execute(database.db);
  }
});
