import type { Kysely } from 'kysely';

/**
 * Webhook delivery: outbox rows queued by a replay carry its id (they do not count towards the event's own
 * delivery state), and an attempt made as part of a batch carries the batch id.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('event_outbox').addColumn('replay_id', 'text').execute();
  await db.schema.createIndex('event_outbox_replay').on('event_outbox').columns(['replay_id', 'status']).execute();
  await db.schema.alterTable('delivery_attempts').addColumn('batch_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('event_outbox_replay').ifExists().execute();
  await db.schema.alterTable('delivery_attempts').dropColumn('batch_id').execute();
  await db.schema.alterTable('event_outbox').dropColumn('replay_id').execute();
}
