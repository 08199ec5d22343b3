import { type RawBuilder, sql } from 'kysely';
import type { Dialect } from '../storage/database.js';

/**
 * `column IN (…ids)` with one parameter however many ids there are: a JSON array on SQLite
 * (`json_each`), a text array on PostgreSQL (`= any`). The SQL text stays the same from call to call, so
 * the prepared statement is reused (and the SQLite statement cache is not flooded with one text per list
 * length).
 */
export function idIn(dialect: Dialect, column: string, ids: readonly string[]): RawBuilder<boolean> {
  return dialect === 'postgres'
    ? sql<boolean>`${sql.ref(column)} = any(cast(${[...ids]} as text[]))`
    : sql<boolean>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(ids)}))`;
}

/** `column NOT IN (…ids)`, as `idIn`. */
export function idNotIn(dialect: Dialect, column: string, ids: readonly string[]): RawBuilder<boolean> {
  return dialect === 'postgres'
    ? sql<boolean>`not (${sql.ref(column)} = any(cast(${[...ids]} as text[])))`
    : sql<boolean>`${sql.ref(column)} not in (select value from json_each(${JSON.stringify(ids)}))`;
}

/**
 * The number `counts` gives for the key in `column`, else `fallback`: one parameter for the whole map
 * (a JSON object), as `idIn`.
 */
export function countFor(
  dialect: Dialect,
  column: string,
  counts: ReadonlyMap<string, number>,
  fallback: number,
): RawBuilder<number> {
  const json = JSON.stringify(Object.fromEntries(counts));
  return dialect === 'postgres'
    ? sql<number>`coalesce(cast(cast(${json} as jsonb) ->> ${sql.ref(column)} as integer), cast(${fallback} as integer))`
    : // json_extract, not a json_each subquery: SQLite keeps the parsed document between rows (4× faster).
      sql<number>`coalesce(json_extract(${json}, '$."' || ${sql.ref(column)} || '"'), ${fallback})`;
}
