import type { Kysely } from 'kysely';

/** Durable tasks and their log lines. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('progress', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('details', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('result', 'text')
    .addColumn('error', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('estimated_completion', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('cancelled_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('resumable', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('instance_id', 'text')
    .addColumn('claim', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('tasks_status_lease').on('tasks').columns(['status', 'lease_until']).execute();
  await db.schema.createIndex('tasks_type').on('tasks').column('type').execute();
  await db.schema.createIndex('tasks_created_at').on('tasks').column('created_at').execute();

  await db.schema
    .createTable('task_logs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull().references('tasks.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('timestamp', 'text', (c) => c.notNull())
    .addColumn('level', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('task_logs_task').on('task_logs').columns(['task_id', 'timestamp']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('task_logs').ifExists().execute();
  await db.schema.dropTable('tasks').ifExists().execute();
}
