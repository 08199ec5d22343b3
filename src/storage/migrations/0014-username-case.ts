import { type Kysely, sql } from 'kysely';

/**
 * Usernames are unique whatever their case (`alice` and `Alice` are one name, as e-mail addresses already
 * are). A database that already holds two names differing only in case keeps working without the index; the
 * platform's own check still refuses new ones (docs/administration.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const clash = await sql<{ name: string }>`
    select lower(username) as name from users group by lower(username) having count(*) > 1 limit 1
  `.execute(db);
  if (clash.rows.length > 0) return;
  await db.schema
    .createIndex('users_username_lower')
    .on('users')
    .unique()
    .expression(sql`lower(username)`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('users_username_lower').ifExists().execute();
}
