import { CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { Dialect } from './database.js';

/**
 * A statement of a hot path written once as SQL text and run as it is, without building and compiling a
 * Kysely query tree for every call (which costs more than SQLite's own work for a small statement). The text
 * uses `?` for parameters and `list(?)` for one parameter holding a list of ids; `dialectSql` turns it into
 * the dialect's form once: a JSON array read by `json_each` on SQLite, a text array on PostgreSQL, whose
 * parameters are numbered. The text stays the same from call to call, so each stays one prepared statement.
 */
export function dialectSql(dialect: Dialect, text: string): string {
  if (dialect === 'sqlite') return text.replaceAll('list(?)', '(select value from json_each(?))');
  let n = 0;
  return text.replaceAll('list(?)', '(select unnest(?::text[]))').replace(/\?/g, () => `$${++n}`);
}

/** The value of a `list(?)` parameter. */
function listParam(dialect: Dialect, ids: readonly string[]): string | string[] {
  return dialect === 'sqlite' ? JSON.stringify(ids) : [...ids];
}

/** Runs a statement made by `dialectSql` with its parameters, on the database or inside a transaction. */
export function runSql<R>(
  executor: Pick<Kysely<never>, 'executeQuery'>,
  text: string,
  params: readonly unknown[],
): Promise<QueryResult<R>> {
  return executor.executeQuery<R>(CompiledQuery.raw(text, [...params]));
}

// Ids per `list(?)` parameter, at most: a PostgreSQL array or a JSON text of a few tens of kilobytes.
const IDS_PER_STATEMENT = 500;

/**
 * Runs a statement with a `list(?)` for every id (each once), a few hundred ids at a time, and answers the rows
 * of all runs. `params` places that list among the statement's other parameters (by default it is the only one).
 */
export async function runSqlForIds<R>(
  executor: Pick<Kysely<never>, 'executeQuery'>,
  dialect: Dialect,
  text: string,
  ids: Iterable<string>,
  params: (list: string | string[]) => readonly unknown[] = (list) => [list],
): Promise<R[]> {
  const unique = [...new Set(ids)];
  const rows: R[] = [];
  for (let i = 0; i < unique.length; i += IDS_PER_STATEMENT) {
    const list = listParam(dialect, unique.slice(i, i + IDS_PER_STATEMENT));
    const result = await runSql<R>(executor, text, params(list));
    for (const r of result.rows) rows.push(r);
  }
  return rows;
}

const prepared = new Map<string, string>();

/**
 * Marks a statement (of `dialectSql`) as one PostgreSQL keeps prepared on each connection, under a name, so it
 * is parsed and planned once per connection instead of on every call. Only for hot statements with a fixed
 * text whose result columns never change (no `select *`: a prepared statement fails once a migration changes
 * the columns it returns). Answers the text.
 */
export function preparedSql(text: string): string {
  if (!prepared.has(text)) prepared.set(text, `platform_${prepared.size + 1}`);
  return text;
}

/** The name a statement is kept prepared under (PostgreSQL), if it is one of `preparedSql`. */
export const preparedName = (text: string): string | undefined => prepared.get(text);
