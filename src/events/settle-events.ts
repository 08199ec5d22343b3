import type { Kysely } from 'kysely';
import type { Dialect } from '../storage/database.js';
import { dialectSql, runSqlForIds } from '../storage/dialect-sql.js';
import type { Tables } from '../storage/tables.js';

// An event is settled once none of its own (not replayed) deliveries is open: `failed` if any failed. The rows
// are found by id: `("status" || '')` keeps SQLite from reading them through the status index instead, which it
// chose without statistics (a fresh store), scanning every open event, and, for `failed`, every failed delivery
// of the outbox, per statement: a backlog of emitted events made each settle slower (issue 26).
export const SETTLE =
  `update "events" set "status" = case when exists (select 1 from "event_outbox" as "o" ` +
  `where "o"."event_id" = "events"."event_id" and ("o"."status" || '') = 'failed' and "o"."replay_id" is null) ` +
  `then 'failed' else 'processed' end ` +
  `where "event_id" in list(?) and ("status" || '') in ('emitted', 'processing') and not exists (select 1 ` +
  `from "event_outbox" as "o" where "o"."event_id" = "events"."event_id" ` +
  `and "o"."status" in ('pending', 'delivering') and "o"."replay_id" is null)`;
const SQL = { sqlite: dialectSql('sqlite', SETTLE), postgres: dialectSql('postgres', SETTLE) };

/**
 * `emitted` | `processing` → `processed` | `failed` for those of these events whose own deliveries (not
 * replays) are all settled — or gone (their subscription was deleted): `failed` if one that is still stored
 * failed, else `processed`, as if the deleted ones had never been queued. With several instances (PostgreSQL),
 * run it after the settling write committed: whichever commits last sees every other's rows settled.
 */
export async function settleEvents(
  executor: Kysely<Tables>,
  dialect: Dialect,
  eventIds: readonly string[],
): Promise<void> {
  await runSqlForIds(executor, dialect, SQL[dialect], eventIds);
}
