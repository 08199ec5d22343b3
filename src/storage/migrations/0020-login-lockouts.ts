import type { Kysely } from 'kysely';

/**
 * Failed logins counted by the name typed, for names that belong to no account: they lock after
 * `auth.max_failed_logins` exactly as an account does, so a lockout does not tell which names exist. The table is
 * kept to a bounded number of names (the least recently tried are forgotten first).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('login_lockouts')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('failed_login_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_until', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('login_lockouts_updated_at')
    .on('login_lockouts')
    .column('updated_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('login_lockouts').ifExists().execute();
}
