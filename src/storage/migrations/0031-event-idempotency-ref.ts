import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * The Idempotency-Key an event was emitted with (`POST /api/v1/events`), as a digest of the caller and the key,
 * written in the event's own transaction: a retry after a crash between that commit and the stored answer finds
 * the event instead of emitting it again (ADR 0011). Null for events emitted without a key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').addColumn('idempotency_ref', 'text').execute();
  await db.schema
    .createIndex('events_idempotency_ref')
    .on('events')
    .column('idempotency_ref')
    .where(sql.ref('idempotency_ref'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('events_idempotency_ref').execute();
  await db.schema.alterTable('events').dropColumn('idempotency_ref').execute();
}
