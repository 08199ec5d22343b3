import type { Kysely } from 'kysely';

/**
 * The W3C trace context an event was emitted in (docs/tracing.md): `traceparent` names the trace and the span
 * its deliveries, plugin calls and stream messages descend from; `tracestate` is the caller's, kept as sent.
 * Null for events stored before this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').addColumn('traceparent', 'text').execute();
  await db.schema.alterTable('events').addColumn('tracestate', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('tracestate').execute();
  await db.schema.alterTable('events').dropColumn('traceparent').execute();
}
