import type { Kysely } from 'kysely';

/**
 * The list indexes of 0016 carry the columns of the reader's visibility condition too (`readableBy`: security
 * level and emitter for confidential events, type for the platform families a reader may not read). A reader
 * who is not an admin then has their page, its deep pages' skipped rows and its count read from the index alone,
 * as an admin has: without them, SQLite counted an unfiltered list by scanning the table (`SCAN events`), and
 * every filter read a table row per index entry to test who may read it. Same names, same leading columns and
 * order as 0016, so every plan that used them still does.
 */
const LIST_INDEXES = [
  ['events_list_time', []],
  ['events_list_type', ['event_type']],
  ['events_list_source', ['source']],
  ['events_list_correlation', ['correlation_id']],
  ['events_list_priority', ['priority']],
  ['events_list_status', ['status']],
] as const;

const ORDER = ['timestamp', 'sequence', 'expires_at'] as const;

/** What `readableBy` reads, less what the index already holds. */
const readerColumns = (lead: readonly string[]) =>
  ['security_level', 'emitter_id', 'event_type'].filter((c) => !lead.includes(c));

async function build(db: Kysely<unknown>, columns: (lead: readonly string[]) => string[]): Promise<void> {
  for (const [name, lead] of LIST_INDEXES) {
    await db.schema.dropIndex(name).ifExists().execute();
    await db.schema.createIndex(name).on('events').columns(columns(lead)).execute();
  }
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await build(db, (lead) => [...lead, ...ORDER, ...readerColumns(lead)]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await build(db, (lead) => [...lead, ...ORDER]);
}
