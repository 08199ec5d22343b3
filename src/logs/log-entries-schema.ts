import type { Kysely } from 'kysely';

/**
 * Creates the log table. Shared by migration 0004 (PostgreSQL keeps logs in the main database) and the
 * SQLite log store (which keeps them in a file of their own), so both hold the same columns.
 */
export async function createLogEntriesTable(db: Kysely<unknown>, ifNotExists = false): Promise<void> {
  let table = db.schema
    .createTable('log_entries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('timestamp', 'text', (c) => c.notNull())
    .addColumn('level', 'text', (c) => c.notNull())
    .addColumn('level_value', 'integer', (c) => c.notNull())
    .addColumn('component', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('ip_address', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'));
  if (ifNotExists) table = table.ifNotExists();
  await table.execute();
  for (const [name, columns] of [
    ['log_entries_timestamp', ['timestamp']],
    ['log_entries_level', ['level_value', 'timestamp']],
    ['log_entries_component', ['component', 'timestamp']],
  ] as const) {
    let index = db.schema
      .createIndex(name)
      .on('log_entries')
      .columns([...columns]);
    if (ifNotExists) index = index.ifNotExists();
    await index.execute();
  }
}
