import type { Kysely } from 'kysely';

/**
 * A task can say it is past the point where stopping would leave its work half done (a restore once its
 * database step begins): from then on a cancel is refused. Stored on the row, so the refusal holds on every
 * instance, and the check and the cancel are one conditional update each.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('tasks')
    .addColumn('cancellable', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tasks').dropColumn('cancellable').execute();
}
