import type BetterSqlite3 from 'better-sqlite3';

/**
 * The name of a SQL function on the platform's SQLite connection that lowers text as JavaScript does, in every
 * alphabet (SQLite's own `lower()` folds ASCII letters only, PostgreSQL's every alphabet). For case-insensitive
 * searches; `lower()` itself stays SQLite's, as the unique index on `lower(username)` was built with it.
 */
export const UNICODE_LOWER = 'unicode_lower';

export function registerUnicodeLower(sqlite: BetterSqlite3.Database): void {
  sqlite.function(UNICODE_LOWER, { deterministic: true }, (value: unknown) =>
    typeof value === 'string' ? value.toLowerCase() : value,
  );
}
