import { CompiledQuery, type Insertable, type Kysely } from 'kysely';
import type { Dialect } from './database.js';
import type { Tables } from './tables.js';

const CHUNK = 500;
// SQLite: rows per statement, at most; every statement holds a power of two of rows, so a table has a handful
// of distinct SQL texts (each prepared once) however its batches vary in size.
const SQLITE_CHUNK = 128;
const texts = new Map<string, string>();

/**
 * Inserts rows into one table, inside the caller's transaction, taking the named columns of each row (a column a
 * row lacks is written as null).
 *
 * SQLite: multi-row statements of 128, 64, ... 1 rows (a batch of 48 is three statements: 32, 16), their SQL
 * text built once per size and the statement prepared once; running a statement through Kysely costs more than
 * SQLite's work for a row, so fewer statements is what counts. PostgreSQL: multi-row inserts of up to 500
 * rows, one round trip each.
 */
export async function insertRows<T extends keyof Tables & string>(
  executor: Kysely<Tables>,
  dialect: Dialect,
  table: T,
  columns: readonly (keyof Tables[T] & string)[],
  rows: readonly Insertable<Tables[T]>[],
): Promise<void> {
  if (rows.length === 0) return;
  if (dialect === 'sqlite') {
    for (const query of sqliteInserts(table, columns, rows)) await executor.executeQuery(query);
    return;
  }
  for (let i = 0; i < rows.length; i += CHUNK) {
    await executor
      .insertInto(table)
      .values(rows.slice(i, i + CHUNK) as never)
      .execute();
  }
}

/**
 * SQLite: the statements `insertRows` runs, compiled, for a caller that runs them elsewhere (the writer thread:
 * Database.durableBatch). `placeholders` gives a column an SQL expression of its one parameter instead of `?`
 * (the event writer computes each row's sequence from the counter row updated earlier in the same batch).
 */
export function sqliteInserts<T extends keyof Tables & string>(
  table: T,
  columns: readonly (keyof Tables[T] & string)[],
  rows: readonly Insertable<Tables[T]>[],
  placeholders: Partial<Record<keyof Tables[T] & string, string>> = {},
): CompiledQuery[] {
  const queries: CompiledQuery[] = [];
  for (let i = 0; i < rows.length; ) {
    let size = SQLITE_CHUNK;
    while (size > rows.length - i) size >>= 1;
    const values: unknown[] = [];
    for (let r = i; r < i + size; r++) {
      const row = rows[r] as Record<string, unknown>;
      for (const c of columns) values.push(row[c] ?? null);
    }
    queries.push(CompiledQuery.raw(sqliteInsert(table, columns, size, placeholders), values));
    i += size;
  }
  return queries;
}

function sqliteInsert(
  table: string,
  columns: readonly string[],
  size: number,
  placeholders: Partial<Record<string, string>>,
): string {
  // The placeholders are part of the text's key only when given: a plain insert (an emit's, on the server's
  // connection) builds no list of them per call.
  const custom = Object.keys(placeholders).length > 0;
  const key = `${table}(${columns.join(',')})${size}${custom ? JSON.stringify(placeholders) : ''}`;
  let text = texts.get(key);
  if (text === undefined) {
    const tuple = `(${columns.map((c) => placeholders[c] ?? '?').join(', ')})`;
    text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${Array(size).fill(tuple).join(', ')}`;
    texts.set(key, text);
  }
  return text;
}
