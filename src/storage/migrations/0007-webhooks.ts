import { type Kysely, sql } from 'kysely';

/**
 * Webhook delivery: outbox rows queued by a replay carry its id (they do not count towards the event's own
 * delivery state), and an attempt made as part of a batch carries the batch id.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('event_outbox').addColumn('replay_id', 'text').execute();
  // Partial: the outbox's own rows (no replay) never touch it, so delivering them costs no upkeep here.
  await db.schema
    .createIndex('event_outbox_replay')
    .on('event_outbox')
    .columns(['replay_id', 'status'])
    .where(sql.ref('replay_id'), 'is not', null)
    .execute();
  await db.schema.alterTable('delivery_attempts').addColumn('batch_id', 'text').execute();
  // Claims read pending rows in priority order: with this index they stop after the rows they take instead of
  // sorting the whole backlog. It replaces (status, next_attempt_at, …), which planners preferred for its range
  // and then sorted every due row on each claim.
  await db.schema.dropIndex('event_outbox_due').ifExists().execute();
  await db.schema
    .createIndex('event_outbox_claim')
    .on('event_outbox')
    .columns(['status', 'priority desc', 'sequence'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('event_outbox_claim').ifExists().execute();
  await db.schema
    .createIndex('event_outbox_due')
    .on('event_outbox')
    .columns(['status', 'next_attempt_at', 'priority', 'sequence'])
    .execute();
  await db.schema.dropIndex('event_outbox_replay').ifExists().execute();
  await db.schema.alterTable('delivery_attempts').dropColumn('batch_id').execute();
  await db.schema.alterTable('event_outbox').dropColumn('replay_id').execute();
}
