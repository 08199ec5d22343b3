import type { Kysely } from 'kysely';

/**
 * The per-subscription outbox index also holds the claim order, so a claim reads each subscription's next
 * rows straight from it (exactly as many as that subscription has room for) instead of ranking a window of
 * every subscription's rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('event_outbox_subscription').execute();
  await db.schema
    .createIndex('event_outbox_subscription')
    .on('event_outbox')
    .columns(['subscription_id', 'status', 'priority desc', 'sequence'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('event_outbox_subscription').execute();
  await db.schema
    .createIndex('event_outbox_subscription')
    .on('event_outbox')
    .columns(['subscription_id', 'status'])
    .execute();
}
