import type BetterSqlite3 from 'better-sqlite3';

/**
 * The name of a SQL function on the platform's SQLite connection that lowers text as JavaScript does, in every
 * alphabet (SQLite's own `lower()` folds ASCII letters only, PostgreSQL's every alphabet). For case-insensitive
 * searches; `lower()` itself stays SQLite's, as the unique index on `lower(username)` was built with it.
 */
export const UNICODE_LOWER = 'unicode_lower';

/** Registers it under `name` (the log store, with no index on lower(), replaces SQLite's own `lower`). */
export function registerUnicodeLower(sqlite: BetterSqlite3.Database, name = UNICODE_LOWER): void {
  sqlite.function(name, { deterministic: true }, (value: unknown) =>
    typeof value === 'string' ? value.toLowerCase() : value,
  );
}
