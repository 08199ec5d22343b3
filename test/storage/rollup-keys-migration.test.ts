import { join } from 'node:path';
import { type Kysely, Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/database.js';
import { migrationList } from '../../src/storage/migration-list.js';
import { createPostgresDatabase } from '../../src/storage/postgres/postgres-database.js';
import { createSqliteDatabase } from '../../src/storage/sqlite/sqlite-database.js';
import { insertBulk } from '../helpers/bulk-events.js';
import { provisionStorage } from '../helpers/test-platform.js';

type Row = Record<string, unknown>;

/** Per span, type, source and bucket: the events counted, as the roll-ups of either layout hold them. */
async function figures(db: Kysely<any>, numbered: boolean): Promise<string[]> {
  const from = numbered
    ? sql`event_rollups r join event_rollup_keys k on k.id = r.key_id`
    : sql`event_rollups k`;
  const keyOf = numbered ? sql`r` : sql`k`;
  const rows = await sql<Row>`
    select ${keyOf}.span as span, ${keyOf}.bucket as bucket, k.event_type, k.source, k.security_level,
      k.emitter_key, ${keyOf}.event_count as n
    from ${from} order by 1, 2, 3, 4, 5, 6`.execute(db);
  return rows.rows.map((r) => Object.values(r).map(String).join('|'));
}

/** What a full count of the stored events gives, in the same form. */
async function counted(db: Kysely<any>): Promise<string[]> {
  const rows = await sql<Row>`
    select s.span, substr(e.timestamp, 1, s.width) as bucket, e.event_type, e.source, e.security_level,
      case when e.security_level = 'confidential' then coalesce(e.emitter_id, '') else '' end as emitter_key,
      count(*) as n
    from events e cross join (select 'h' as span, 13 as width union all select 'm', 16) s
    group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6`.execute(db);
  return rows.rows.map((r) => Object.values(r).map(String).join('|'));
}

describe('the upgrade to numbered roll-up keys (migration 0033)', { timeout: 60_000 }, () => {
  let database: Database;
  let cleanup: () => Promise<void>;
  let migrator: Migrator;

  beforeAll(async () => {
    const storage = await provisionStorage();
    cleanup = storage.cleanup;
    const url = (storage.tree as { database?: { url?: string } }).database?.url;
    const dir = (storage.tree as { storage: { data_dir: string } }).storage.data_dir;
    database = url ? createPostgresDatabase(url, 2) : createSqliteDatabase(join(dir, 'platform.db'));
    migrator = new Migrator({
      db: database.db,
      provider: { getMigrations: async () => migrationList },
      migrationTableName: 'platform_migrations',
      migrationLockTableName: 'platform_migrations_lock',
    });
  });
  afterAll(async () => {
    await database?.close();
    await cleanup?.();
  });

  it('keeps every figure of a store written before it, and counts the writes after it', async () => {
    const before = await migrator.migrateTo('0032-event-list-reader-columns');
    expect(before.error).toBeUndefined();
    await insertBulk(database, 3000);
    await sql`update events set security_level = 'confidential', emitter_id = 'usr_a'
      where event_id in ('evt_bulk_7', 'evt_bulk_8')`.execute(database.db);
    const old = await figures(database.db, false);
    expect(old).toEqual(await counted(database.db));

    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect(await figures(database.db, true)).toEqual(old);

    // The triggers, by key number: new keys, deletions, a moved event.
    await sql`update events set event_type = 'moved.kind', source = 'elsewhere' where event_id = 'evt_bulk_9'`.execute(
      database.db,
    );
    await sql`delete from events where event_id in ('evt_bulk_10', 'evt_bulk_7')`.execute(database.db);
    await sql`insert into events (event_id, sequence, event_type, source, timestamp, priority, status,
        security_level, data, metadata, correlation_id, emitted_by, durable_subscribers)
      values ('evt_new', -100000, 'zebra.new', 'src-new', '2026-03-01T10:00:00.000Z', 5, 'processed',
        'confidential', '{}', '{}', 'c', 'someone', 0),
      ('evt_known', -100001, 'shop1.kind1', 'src1', '2026-03-01T10:00:01.000Z', 5, 'processed',
        'internal', '{}', '{}', 'c', 'someone', 0)`.execute(database.db);
    // A key is numbered once: writes of known keys draw no number (PostgreSQL's identity would skip it, and the new
    // key, after the known one in the claim's order, would show the gap).
    const numbers = await sql<{ top: number | string; n: number | string }>`
      select max(id) as top, count(*) as n from event_rollup_keys`.execute(database.db);
    expect(Number(numbers.rows[0]?.top)).toBe(Number(numbers.rows[0]?.n));
    const after = await figures(database.db, true);
    expect(after).toEqual(await counted(database.db));
    expect(after.some((f) => f.includes('|zebra.new|src-new|confidential|'))).toBe(true);

    // And back: the texts' layout with the same figures.
    const down = await migrator.migrateDown();
    expect(down.error).toBeUndefined();
    expect(await figures(database.db, false)).toEqual(after);
  });
});
