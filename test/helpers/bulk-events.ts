import { sql } from 'kysely';
import type { Database } from '../../src/storage/database.js';

/**
 * Writes `count` events straight into the table (as emits store them; the roll-ups follow by trigger), in one
 * statement: enough for a read or a purge to take a while, loaded in seconds. Their sequence numbers are below
 * every emitted one: the stream hub follows the store's newest sequence, and would read all of them as a gap to
 * fill on the next emit. Type `shop<i%10>.kind<i%7>`, source `src<i%10>`, priority 1–10, 10 ms apart from
 * 2026-01-01.
 */
export async function insertBulk(database: Database, count: number): Promise<void> {
  const columns = sql.raw(
    'event_id, sequence, event_type, source, timestamp, priority, status, security_level, data, metadata, ' +
      'correlation_id, emitted_by, durable_subscribers',
  );
  if (database.dialect === 'sqlite') {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${count})
      insert into events (${columns})
      select 'evt_bulk_' || i, -i, 'shop' || (i % 10) || '.kind' || (i % 7), 'src' || (i % 10),
        strftime('%Y-%m-%dT%H:%M:%fZ', 1767225600 + i / 100.0, 'unixepoch'), 1 + i % 10,
        case when i % 97 = 0 then 'failed' else 'processed' end, 'internal', '{}',
        '{"correlation_id":"corr-' || (i % 5000) || '","request_id":"req_' || i || '","user_agent":"bulk","ip_address":"127.0.0.1"}',
        'corr-' || (i % 5000), 'src' || (i % 10), 0
      from n`.execute(database.db);
  } else {
    await sql`insert into events (${columns})
      select 'evt_bulk_' || i, -i, 'shop' || (i % 10) || '.kind' || (i % 7), 'src' || (i % 10),
        to_char(to_timestamp(1767225600 + i / 100.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        1 + i % 10, case when i % 97 = 0 then 'failed' else 'processed' end, 'internal', '{}',
        '{"correlation_id":"corr-' || (i % 5000) || '","request_id":"req_' || i || '","user_agent":"bulk","ip_address":"127.0.0.1"}',
        'corr-' || (i % 5000), 'src' || (i % 10), 0
      from generate_series(1, ${count}::int) as i`.execute(database.db);
    await sql`analyze events`.execute(database.db);
  }
  // The insert's write-ahead log is as large as the rows: copied into the database now, not by the next emit.
  if (database.dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(database.db);
}
