import type { Kysely } from 'kysely';

/**
 * A webhook subscription may limit how fast its target is sent to (`webhook_config.rate_limit`, deliveries per
 * second, fractions allowed). Null, as for every subscription made before this migration: no limit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').addColumn('rate_limit', 'double precision').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').dropColumn('rate_limit').execute();
}
