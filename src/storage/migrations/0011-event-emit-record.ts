import type { Kysely } from 'kysely';

/**
 * Who emitted an event and how many durable subscribers it had, kept on the event row itself: the
 * `event_emitted` entry of the event's audit trail is read from them instead of being written as a row of
 * its own (one row and two index entries less for every event). Events stored before this migration keep
 * their `event_emitted` audit row and have null here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').addColumn('emitted_by', 'text').execute();
  await db.schema.alterTable('events').addColumn('durable_subscribers', 'integer').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('durable_subscribers').execute();
  await db.schema.alterTable('events').dropColumn('emitted_by').execute();
}
