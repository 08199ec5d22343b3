import type { Kysely } from 'kysely';

/**
 * One index per filter of the event list, each in the list's order (`timestamp`, then `sequence`) and ending
 * with `expires_at`, which every list reads to leave out expired events. A filtered page is then read in
 * order straight from its index, and counting or skipping past rows (the `total`, deep pages) reads the index
 * alone, not the table's rows. `event_type` and `priority` lead the indexes that also serve the list sorted
 * by them. They replace the single-column indexes of 0002, which served the same filters without the order.
 */
const LIST_INDEXES = [
  ['events_list_time', []],
  ['events_list_type', ['event_type']],
  ['events_list_source', ['source']],
  ['events_list_correlation', ['correlation_id']],
  ['events_list_priority', ['priority']],
  ['events_list_status', ['status']],
] as const;

const OLD_INDEXES = [
  ['events_timestamp', ['timestamp']],
  ['events_type_timestamp', ['event_type', 'timestamp']],
  ['events_source', ['source']],
  ['events_correlation', ['correlation_id']],
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name] of OLD_INDEXES) await db.schema.dropIndex(name).ifExists().execute();
  for (const [name, lead] of LIST_INDEXES) {
    await db.schema
      .createIndex(name)
      .on('events')
      .columns([...lead, 'timestamp', 'sequence', 'expires_at'])
      .execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [name] of LIST_INDEXES) await db.schema.dropIndex(name).ifExists().execute();
  for (const [name, columns] of OLD_INDEXES) {
    await db.schema
      .createIndex(name)
      .on('events')
      .columns([...columns])
      .execute();
  }
}
