import type { Kysely } from 'kysely';

/**
 * The event catalogue's types registered by an administrator: a JSON Schema for `data`, a description and example
 * payloads (JSON as text). Types a plugin declares in its manifest are read from the manifest, not kept here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_types')
    .addColumn('event_type', 'text', (c) => c.primaryKey())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('schema', 'text', (c) => c.notNull())
    .addColumn('examples', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('registered_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('event_types').ifExists().execute();
}
