import { join } from 'node:path';
import { sql } from 'kysely';
import type { Dialect } from '../storage/database.js';
import { type Manifest, tableFile } from './backup-manifest.js';
import { INSTALLATION_ROWS } from './backup-scope.js';
import { type ColumnInfo, dependencyOrder, type LooseDb, type TableInfo } from './database-schema.js';
import { jsonlLines } from './jsonl-lines.js';
import { decodeValue } from './row-codec.js';

export interface LoadReport {
  tables: Record<string, number>;
  /** Columns of the archive the live tables no longer have (dropped by a later migration); their values are not loaded. */
  ignored_columns: Record<string, string[]>;
}

/**
 * Replaces the rows of `tables` with the archive's, inside the caller's transaction: deletes children
 * before parents, inserts parents before children, so every foreign key holds at every statement. A table
 * the archive does not have (added by a later migration) ends up empty, as it was when the backup was
 * taken. Any bad line throws, and the caller's transaction rolls everything back.
 */
export async function replaceTables(
  trx: LooseDb,
  dialect: Dialect,
  tables: readonly TableInfo[],
  archive: { dir: string; manifest: Manifest },
  options: { maxLineBytes: number; onTable?: (table: string, done: number, of: number) => void },
): Promise<LoadReport> {
  const order = dependencyOrder(tables);
  for (const table of [...order].reverse()) {
    let q = trx.deleteFrom(table.name);
    const live = INSTALLATION_ROWS[table.name];
    if (live) {
      const values = await trx.selectFrom(table.name).select(sql.ref(live.column).as('v')).execute();
      const kept = values.map((r) => String(r['v'])).filter(live.keep);
      if (kept.length > 0) q = q.where(sql.ref(live.column), 'not in', kept);
    }
    await q.execute();
  }
  const report: LoadReport = { tables: {}, ignored_columns: {} };
  let done = 0;
  for (const table of order) {
    const dumped = archive.manifest.tables[table.name];
    report.tables[table.name] = dumped
      ? await loadTable(trx, dialect, table, join(archive.dir, tableFile(table.name)), dumped, options)
      : 0;
    const ignored = (dumped?.columns ?? []).filter((c) => !table.columns.some((t) => t.name === c));
    if (ignored.length > 0) report.ignored_columns[table.name] = ignored;
    if (dialect === 'postgres') await resetSequences(trx, table);
    done += 1;
    options.onTable?.(table.name, done, order.length);
  }
  return report;
}

async function loadTable(
  trx: LooseDb,
  dialect: Dialect,
  table: TableInfo,
  file: string,
  dumped: { rows: number },
  options: { maxLineBytes: number },
): Promise<number> {
  const columns = new Map<string, ColumnInfo>(table.columns.map((c) => [c.name, c]));
  const live = INSTALLATION_ROWS[table.name];
  // Both dialects cap bound parameters per statement (SQLite 32766, PostgreSQL 65535).
  const batchSize = Math.max(1, Math.min(500, Math.floor(30_000 / Math.max(1, columns.size))));
  let batch: Record<string, unknown>[] = [];
  let count = 0;
  let lineNo = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    await trx.insertInto(table.name).values(batch).execute();
    batch = [];
  };
  for await (const line of jsonlLines(file, options.maxLineBytes)) {
    lineNo += 1;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      throw new Error(`${table.name}.jsonl line ${lineNo} is not valid JSON`);
    }
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      throw new Error(`${table.name}.jsonl line ${lineNo} is not a row object`);
    }
    const row: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(record)) {
      const column = columns.get(name);
      if (column) row[name] = decodeValue(value, column, dialect);
    }
    count += 1;
    if (live?.keep(String(row[live.column]))) continue;
    batch.push(row);
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  if (count !== dumped.rows) {
    throw new Error(`${table.name}.jsonl has ${count} rows; the manifest says ${dumped.rows}`);
  }
  return count;
}

/** Serial and identity columns continue after the largest restored value. */
async function resetSequences(trx: LooseDb, table: TableInfo): Promise<void> {
  for (const column of table.columns.filter((c) => c.isAutoIncrementing)) {
    await sql`select setval(pg_get_serial_sequence(${table.name}, ${column.name}),
      coalesce((select max(${sql.ref(column.name)}) from ${sql.table(table.name)}), 0) + 1, false)`.execute(
      trx,
    );
  }
}
