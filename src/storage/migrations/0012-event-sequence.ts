import { type Kysely, sql } from 'kysely';

/**
 * The last sequence number given to an event, in a one-row table. The event writer takes its numbers by
 * updating this row in the statement (PostgreSQL) or transaction (SQLite) that stores the batch: the row lock
 * is held until the commit, so numbers follow commit order with several writers, and a batch that fails
 * gives its numbers back with its rollback. Numbers are never handed out twice, also after a purge removed the
 * newest events. The writer also takes the largest stored sequence into account, so a restored database whose
 * counter is behind its events (an archive of an older release) heals on the next emit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_sequence')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('last', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into event_sequence (id, last) select 1, coalesce(max(sequence), 0) from events`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('event_sequence').execute();
}
