import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** Values of `pragma synchronous` at which a commit syncs the WAL to disk before it returns. */
const FULL = 2;

/**
 * The connection as Kysely sees it, counting the commits it syncs to disk on the server's thread
 * (`Database.syncedCommits`): a `commit` of a transaction that changed rows, or a statement that writes outside
 * a transaction (SQLite commits it by itself), while the connection runs `synchronous = FULL` or higher.
 * Counted as Kysely prepares them, just before they run: a write statement that then changes nothing is counted
 * too (SQLite has nothing to sync then), never a synced commit left out.
 */
export function countingSyncedCommits(
  handle: SqliteDatabase,
  sqlite: BetterSqlite3.Database,
): { handle: SqliteDatabase; count: () => number } {
  const changes = sqlite.prepare('select total_changes()').pluck();
  const level = sqlite.prepare('pragma synchronous').pluck();
  const synced = () => (level.get() as number) >= FULL;
  let count = 0;
  let changesAtBegin = 0;
  return {
    count: () => count,
    handle: {
      close: () => handle.close(),
      prepare(sql: string) {
        const statement = handle.prepare(sql) as ReturnType<SqliteDatabase['prepare']> & {
          readonly?: boolean;
        };
        if (sql === 'begin') changesAtBegin = changes.get() as number;
        else if (sql === 'commit') {
          if (sqlite.inTransaction && (changes.get() as number) > changesAtBegin && synced()) count += 1;
        } else if (!sqlite.inTransaction && statement.readonly === false && synced()) count += 1;
        return statement;
      },
    },
  };
}
