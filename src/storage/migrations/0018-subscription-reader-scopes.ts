import type { Kysely } from 'kysely';

/**
 * A subscription created with an API key receives only what that key may read: the key's scopes are kept
 * with it (JSON array) and narrow its owner's permissions when events are matched and replayed. Null for one
 * made with a session (or by a plugin), and for every subscription made before this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').addColumn('reader_scopes', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').dropColumn('reader_scopes').execute();
}
