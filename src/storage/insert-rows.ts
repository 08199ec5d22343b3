import { CompiledQuery, type Insertable, type Kysely } from 'kysely';
import type { Dialect } from './database.js';
import type { Tables } from './tables.js';

const CHUNK = 500;
const texts = new Map<string, string>();

/**
 * Inserts rows into one table, inside the caller's transaction, taking the named columns of each row (a column a
 * row lacks is written as null).
 *
 * SQLite: one single-row statement per row with the same SQL text every time, so it stays one prepared statement
 * and no query is built per row or per batch (building a multi-row insert cost more than running it; SQLite
 * runs a row of either form at the same speed). PostgreSQL: multi-row inserts of up to 500 rows, one round trip
 * each.
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
    const key = `${table}(${columns.join(',')})`;
    let text = texts.get(key);
    if (text === undefined) {
      text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map(() => '?').join(', ')})`;
      texts.set(key, text);
    }
    for (const row of rows) {
      const values = row as Record<string, unknown>;
      await executor.executeQuery(
        CompiledQuery.raw(
          text,
          columns.map((c) => values[c] ?? null),
        ),
      );
    }
    return;
  }
  for (let i = 0; i < rows.length; i += CHUNK) {
    await executor
      .insertInto(table)
      .values(rows.slice(i, i + CHUNK) as never)
      .execute();
  }
}
