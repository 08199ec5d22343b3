import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
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
  options: { maxLineBytes: number; onProgress?: (fraction: number) => void },
): Promise<LoadReport> {
  const order = dependencyOrder(tables);
  for (const table of [...order].reverse()) await emptyTable(trx, dialect, table);
  const report: LoadReport = { tables: {}, ignored_columns: {} };
  // Progress by rows loaded (what takes the time), out of every row the archive has for these tables.
  const total = order.reduce((n, t) => n + (archive.manifest.tables[t.name]?.rows ?? 0), 0);
  let loaded = 0;
  const rowsLoaded = (n: number) => {
    loaded += n;
    options.onProgress?.(total === 0 ? 1 : Math.min(1, loaded / total));
  };
  for (const table of order) {
    const dumped = archive.manifest.tables[table.name];
    report.tables[table.name] = dumped
      ? await loadTable(trx, dialect, table, join(archive.dir, tableFile(table.name)), dumped, {
          ...options,
          rowsLoaded,
        })
      : 0;
    const ignored = (dumped?.columns ?? []).filter((c) => !table.columns.some((t) => t.name === c));
    if (ignored.length > 0) report.ignored_columns[table.name] = ignored;
    if (dialect === 'postgres') await resetSequences(trx, table);
  }
  options.onProgress?.(1);
  return report;
}

/** Rows deleted per statement on SQLite, whose statements run on the event loop's thread. */
const DELETE_BATCH = 2000;

/**
 * Deletes a table's rows, but the installation's own (INSTALLATION_ROWS). PostgreSQL answers over the network,
 * so one statement costs the event loop nothing. SQLite runs each statement on this thread: a table of millions
 * of rows is deleted a bounded batch at a time (by rowid), with a turn of the event loop between batches.
 */
async function emptyTable(trx: LooseDb, dialect: Dialect, table: TableInfo): Promise<void> {
  const live = INSTALLATION_ROWS[table.name];
  let kept: string[] = [];
  if (live) {
    const values = await trx.selectFrom(table.name).select(sql.ref(live.column).as('v')).execute();
    kept = values.map((r) => String(r['v'])).filter(live.keep);
  }
  const keep = live && kept.length > 0 ? sql`${sql.ref(live.column)} not in (${sql.join(kept)})` : sql`1 = 1`;
  if (dialect === 'postgres') {
    await sql`delete from ${sql.table(table.name)} where ${keep}`.execute(trx);
    return;
  }
  for (;;) {
    const result = await sql`delete from ${sql.table(table.name)} where rowid in (
      select rowid from ${sql.table(table.name)} where ${keep} limit ${DELETE_BATCH})`.execute(trx);
    if (Number(result.numAffectedRows ?? 0) < DELETE_BATCH) return;
    await turn();
  }
}

async function loadTable(
  trx: LooseDb,
  dialect: Dialect,
  table: TableInfo,
  file: string,
  dumped: { rows: number },
  options: { maxLineBytes: number; rowsLoaded: (n: number) => void },
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
    options.rowsLoaded(batch.length);
    batch = [];
    // Lines come from a buffered reader, often without a real wait between batches: each SQLite insert runs
    // on this thread, so the event loop gets a turn here (PostgreSQL's inserts are network waits anyway).
    if (dialect === 'sqlite') await turn();
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
