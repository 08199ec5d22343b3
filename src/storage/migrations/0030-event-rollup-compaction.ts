import type { Kysely } from 'kysely';

/**
 * Compaction of the minute roll-ups (`event_rollups`, migration 0015): minute rows older than
 * `events.rollup_minute_retention_hours` are deleted by the `event_rollup_compaction` job (the hour rows, written
 * in the same transactions, already hold their counts). One row, `minutes`, says from which hour
 * (`minutes_from`, `YYYY-MM-DDTHH`) every minute row is still kept: the stats read minute rows from there on and
 * answer older bounds at hour precision. It only moves forward, and the job deletes only minutes below a value
 * that an earlier run wrote, so a reader that has just read it never misses a minute it counts on.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_rollup_compaction')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('minutes_from', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('event_rollup_compaction').execute();
}
