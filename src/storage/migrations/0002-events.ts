import type { Kysely } from 'kysely';

/** Events, subscriptions, the delivery outbox, delivery attempts and the per-event audit trail. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('sequence', 'bigint', (c) => c.notNull().unique())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('timestamp', 'text', (c) => c.notNull())
    .addColumn('priority', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('security_level', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('data_encrypted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('correlation_id', 'text', (c) => c.notNull())
    .addColumn('emitter_id', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('subscriber_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('processing_time_ms', 'real', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('events_timestamp').on('events').column('timestamp').execute();
  await db.schema
    .createIndex('events_type_timestamp')
    .on('events')
    .columns(['event_type', 'timestamp'])
    .execute();
  await db.schema.createIndex('events_source').on('events').column('source').execute();
  await db.schema.createIndex('events_correlation').on('events').column('correlation_id').execute();

  await db.schema
    .createTable('subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('event_patterns', 'text', (c) => c.notNull())
    .addColumn('filters', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('delivery_method', 'text', (c) => c.notNull())
    .addColumn('webhook_url', 'text')
    .addColumn('webhook_secret', 'text')
    .addColumn('retry_policy', 'text', (c) => c.notNull())
    .addColumn('timeout_seconds', 'integer', (c) => c.notNull())
    .addColumn('batch_config', 'text', (c) => c.notNull())
    .addColumn('plugin_id', 'text')
    .addColumn('events_delivered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('events_failed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_delivery', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('subscriptions_owner').on('subscriptions').column('owner_id').execute();
  await db.schema.createIndex('subscriptions_status').on('subscriptions').column('status').execute();

  await db.schema
    .createTable('event_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.event_id').onDelete('cascade'))
    .addColumn('subscription_id', 'text', (c) =>
      c.notNull().references('subscriptions.id').onDelete('cascade'),
    )
    .addColumn('sequence', 'bigint', (c) => c.notNull())
    .addColumn('priority', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // The dispatcher claims due rows by status, then priority (highest first), then sequence.
  await db.schema
    .createIndex('event_outbox_due')
    .on('event_outbox')
    .columns(['status', 'next_attempt_at', 'priority', 'sequence'])
    .execute();
  await db.schema.createIndex('event_outbox_event').on('event_outbox').column('event_id').execute();
  await db.schema
    .createIndex('event_outbox_subscription')
    .on('event_outbox')
    .columns(['subscription_id', 'status'])
    .execute();

  await db.schema
    .createTable('delivery_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('outbox_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.event_id').onDelete('cascade'))
    .addColumn('subscription_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('latency_ms', 'real')
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('delivery_attempts_event').on('delivery_attempts').column('event_id').execute();
  await db.schema
    .createIndex('delivery_attempts_created')
    .on('delivery_attempts')
    .column('created_at')
    .execute();

  await db.schema
    .createTable('event_audit')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.event_id').onDelete('cascade'))
    .addColumn('timestamp', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('details', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();
  await db.schema
    .createIndex('event_audit_event')
    .on('event_audit')
    .columns(['event_id', 'timestamp'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['event_audit', 'delivery_attempts', 'event_outbox', 'subscriptions', 'events']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
