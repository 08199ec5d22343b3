import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { Database } from '../../src/storage/database.js';
import { SqliteDriver } from '../../src/storage/sqlite/better-sqlite3.js';
import type { Tables } from '../../src/storage/tables.js';

/**
 * The plan of a statement, one line per step: SQLite's EXPLAIN QUERY PLAN details (on `sqliteFile` when given,
 * a read-only connection of its own: the log store's file), PostgreSQL's EXPLAIN. A seq scan is PostgreSQL's
 * choice on small tables; it is turned off here, so a plan that still has one has no index to serve the query.
 */
export async function planOf(
  database: Database,
  query: CompiledQuery,
  options: { sqliteFile?: string } = {},
): Promise<string[]> {
  if (database.dialect === 'sqlite') {
    if (options.sqliteFile) {
      const file = new SqliteDriver(options.sqliteFile, { readonly: true });
      try {
        const rows = file.prepare(`explain query plan ${query.sql}`).all(...query.parameters);
        return (rows as { detail: string }[]).map((r) => r.detail);
      } finally {
        file.close();
      }
    }
    const plan = await database.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
    );
    return plan.rows.map((r) => r.detail);
  }
  const db: Kysely<Tables> = database.db;
  return db.connection().execute(async (c) => {
    await sql`set enable_seqscan = off`.execute(c);
    try {
      const plan = await c.executeQuery<{ 'QUERY PLAN': string }>(
        CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]),
      );
      return plan.rows.map((r) => r['QUERY PLAN']);
    } finally {
      await sql`reset enable_seqscan`.execute(c);
    }
  });
}
