import type { Kysely } from 'kysely';

/** The backup catalogue (the archives themselves live in `<storage.data_dir>/backups/`). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('backups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('includes', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('compression', 'integer', (c) => c.notNull())
    .addColumn('encryption', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('duration_ms', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('backups_created_at').on('backups').column('created_at').execute();
  await db.schema.createIndex('backups_type_created').on('backups').columns(['type', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('backups').ifExists().execute();
}
