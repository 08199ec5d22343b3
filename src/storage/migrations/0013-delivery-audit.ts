import type { Kysely } from 'kysely';

/**
 * A delivery attempt's row is also its entry in the event's audit trail (`event_delivered`,
 * `delivery_retried`, `delivery_failed`): the attempt keeps who made it, when the next one is due and the
 * replay it belonged to, and the trail is read from the attempts instead of from an `event_audit` row written
 * beside each (one row and its index entries less for every delivery). Attempts made before this migration
 * have no actor; their audit entries are the `event_audit` rows written with them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('delivery_attempts').addColumn('actor', 'text').execute();
  await db.schema.alterTable('delivery_attempts').addColumn('next_attempt_at', 'text').execute();
  await db.schema.alterTable('delivery_attempts').addColumn('replay_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('delivery_attempts').dropColumn('replay_id').execute();
  await db.schema.alterTable('delivery_attempts').dropColumn('next_attempt_at').execute();
  await db.schema.alterTable('delivery_attempts').dropColumn('actor').execute();
}
