import { type Kysely, sql } from 'kysely';

/**
 * Less written per event:
 * - Who emitted an event and how many durable subscribers it had, kept on the event row itself: the
 *   `event_emitted` entry of the event's audit trail is read from them instead of being written as a row of
 *   its own (one row and two index entries less for every event). Events stored before this migration keep
 *   their `event_emitted` audit row and have null here.
 * - The expiry index holds only events that expire (most do not); its queries all compare `expires_at`, which
 *   implies it is not null, so both databases still use it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').addColumn('emitted_by', 'text').execute();
  await db.schema.alterTable('events').addColumn('durable_subscribers', 'integer').execute();
  await db.schema.dropIndex('events_expires_at').execute();
  await db.schema
    .createIndex('events_expires_at')
    .on('events')
    .column('expires_at')
    .where(sql.ref('expires_at'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('events_expires_at').execute();
  await db.schema.createIndex('events_expires_at').on('events').column('expires_at').execute();
  await db.schema.alterTable('events').dropColumn('durable_subscribers').execute();
  await db.schema.alterTable('events').dropColumn('emitted_by').execute();
}
