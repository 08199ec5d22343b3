import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/**
 * The SQLite handle as Kysely sees it, with prepared statements kept by SQL text (least recently used
 * dropped beyond `max`). Kysely prepares every query anew, and compiling the SQL was about a tenth of a
 * busy server's CPU; the platform's queries are few distinct texts run many times. A statement that is
 * still being iterated (a streamed query) is busy and cannot run twice at once, so such a caller gets a
 * fresh statement instead.
 *
 * Some failures (a full disk, an I/O error) make SQLite roll the transaction back itself. Kysely then asks for a
 * `rollback`, which would fail with "no transaction is active" and take the place of the error that says what
 * went wrong; with no transaction open that `rollback` does nothing.
 */
export function withStatementCache(sqlite: BetterSqlite3.Database, max = 500): SqliteDatabase {
  const statements = new Map<string, BetterSqlite3.Statement>();
  return {
    close() {
      statements.clear();
      sqlite.close();
    },
    prepare(sql: string) {
      if (sql === 'rollback' && !sqlite.inTransaction) return ALREADY_ROLLED_BACK;
      const cached = statements.get(sql);
      if (cached && !cached.busy) {
        // Re-inserted, so the Map's order stays least recently used first.
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = sqlite.prepare(sql);
      if (!cached) {
        statements.set(sql, statement);
        if (statements.size > max) statements.delete(statements.keys().next().value as string);
      }
      return statement;
    },
  };
}

const ALREADY_ROLLED_BACK = {
  reader: false,
  busy: false,
  run: () => ({ changes: 0, lastInsertRowid: 0 }),
} as unknown as BetterSqlite3.Statement;
