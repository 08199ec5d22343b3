import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Database } from '../storage/database.js';
import { createSqliteDatabase } from '../storage/sqlite/sqlite-database.js';
import type { LooseDb } from './database-schema.js';

/**
 * Runs `read` against a consistent, unchanging view of the database, so every table of a dump is from the
 * same moment. PostgreSQL: a read-only REPEATABLE READ transaction. SQLite: `VACUUM INTO` a copy in
 * `workDir` (one short statement) read through its own connection, because a transaction on the platform's
 * single SQLite connection would hold up every other request for the length of the dump.
 */
export async function withSnapshot<T>(
  database: Database,
  workDir: string,
  read: (db: LooseDb) => Promise<T>,
): Promise<T> {
  if (database.dialect === 'postgres') {
    return database.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        await sql`set transaction read only`.execute(trx);
        return read(trx as unknown as LooseDb);
      });
  }
  const file = join(workDir, 'snapshot.db');
  await sql`vacuum into ${file}`.execute(database.db);
  const copy = createSqliteDatabase(file);
  try {
    return await read(copy.db as unknown as LooseDb);
  } finally {
    await copy.close();
    for (const suffix of ['', '-wal', '-shm']) await rm(file + suffix, { force: true });
  }
}

/** The migrations applied to a database, in order: the archive's schema version. */
export async function appliedMigrations(db: LooseDb): Promise<string[]> {
  const rows = await db.selectFrom('platform_migrations').select('name').orderBy('name').execute();
  return rows.map((r) => String(r['name']));
}
