import type { Kysely } from 'kysely';
import { createLogEntriesTable } from '../../logs/log-entries-schema.js';

/**
 * Metric samples and the log store. On SQLite the log table here stays empty: the log store keeps its records
 * in a separate `logs.db` so log writes never contend with the main database.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('metric_samples')
    .addColumn('timestamp', 'text', (c) => c.notNull())
    // Epoch milliseconds exceed 32 bits: bigint (pg returns int8 as a number through the type parser).
    .addColumn('time_ms', 'bigint', (c) => c.notNull())
    .addColumn('instance', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'double precision', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('metric_samples_name_time')
    .on('metric_samples')
    .columns(['name', 'time_ms'])
    .execute();
  await db.schema.createIndex('metric_samples_time').on('metric_samples').column('time_ms').execute();
  await createLogEntriesTable(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('log_entries').ifExists().execute();
  await db.schema.dropTable('metric_samples').ifExists().execute();
}
