import type { Kysely } from 'kysely';

/** Administration: failed logins (for security metrics and brute-force rules), security alerts, security scans. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('failed_logins')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('occurred_at', 'text', (c) => c.notNull())
    .addColumn('username', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('ip_address', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('reason', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .createIndex('failed_logins_occurred_at')
    .on('failed_logins')
    .column('occurred_at')
    .execute();
  await db.schema
    .createIndex('failed_logins_username')
    .on('failed_logins')
    .columns(['username', 'occurred_at'])
    .execute();
  await db.schema
    .createIndex('failed_logins_ip')
    .on('failed_logins')
    .columns(['ip_address', 'occurred_at'])
    .execute();

  await db.schema
    .createTable('security_alerts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('affected_resources', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('open_key', 'text', (c) => c.unique())
    .addColumn('occurrences', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('acknowledged_at', 'text')
    .addColumn('acknowledged_by', 'text')
    .addColumn('resolved_at', 'text')
    .addColumn('resolved_by', 'text')
    .addColumn('note', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .createIndex('security_alerts_created_at')
    .on('security_alerts')
    .column('created_at')
    .execute();
  await db.schema.createIndex('security_alerts_status').on('security_alerts').column('status').execute();

  await db.schema
    .createTable('security_scans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('components', 'text', (c) => c.notNull())
    .addColumn('severity_threshold', 'text', (c) => c.notNull())
    .addColumn('findings', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('checks', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('error', 'text')
    .addColumn('requested_by', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('duration_ms', 'integer')
    .execute();
  await db.schema
    .createIndex('security_scans_created_at')
    .on('security_scans')
    .column('created_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['security_scans', 'security_alerts', 'failed_logins']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
