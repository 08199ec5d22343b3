import type { Kysely } from 'kysely';

/**
 * A subscription's attempts by time: `GET /api/v1/events/subscriptions/{id}/delivery-timeline` counts the
 * attempts of one subscription within a time range from this index, so its cost follows the attempts in that
 * range, not every attempt stored.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('delivery_attempts_subscription_created')
    .on('delivery_attempts')
    .columns(['subscription_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('delivery_attempts_subscription_created').execute();
}
