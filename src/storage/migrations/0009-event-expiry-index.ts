import type { Kysely } from 'kysely';

/** Finds the next event to expire without a scan (the event list's cached pages end there). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('events_expires_at').on('events').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('events_expires_at').execute();
}
