import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { setImmediate as turn } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Dialect } from '../storage/database.js';
import { INSTALLATION_ROWS } from './backup-scope.js';
import type { LooseDb, TableInfo } from './database-schema.js';
import { encodeValue } from './row-codec.js';
import { openSyncingFile } from './syncing-file-stream.js';

export interface DumpedFile {
  path: string;
  sha256: string;
  bytes: number;
}

export interface DumpedTable {
  rows: number;
  columns: string[];
  file: DumpedFile;
}

/**
 * Rows read per query: at most 500 (a page of a wide table reads and encodes in a few milliseconds), and about
 * 4 MB of JSON, judged from the rows of the page before. The first page of a table reads one row, so the size of
 * its rows is known before many are read: 50 rows of events at the 16 MB payload limit would have been some
 * 800 MB of rows and text at once. Rows of 256 KB (an event at the default payload limit) are then read 16 at a
 * time, so a page's text and rows stay a few megabytes whatever the rows weigh — what the dump worker's capped
 * heap holds (dump-in-worker.ts).
 */
const MAX_PAGE = 500;
const FIRST_PAGE = 1;
const PAGE_BYTES = 4 * 1024 * 1024;

/** The rows of the next page, from the JSON text the last one made of `rows` rows. */
function nextPageSize(textLength: number, rows: number): number {
  if (rows === 0) return FIRST_PAGE;
  const perRow = Math.max(1, textLength / rows);
  return Math.max(1, Math.min(MAX_PAGE, Math.floor(PAGE_BYTES / perRow)));
}

export interface DumpOptions {
  /** Checked between pages: an aborted dump stops with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Called after each page with the rows dumped so far. */
  onRows?: ((rows: number) => void) | undefined;
}

/**
 * Writes one JSON Lines file per table (`<dir>/database/<table>.jsonl`, one object per row) from a database
 * that does not change underneath (a snapshot), in pages read by key, so no table is ever held in memory
 * whole and no single read takes long. SQLite's reads are synchronous: for a backup of a SQLite file this runs
 * in a worker thread (table-dump-worker) with a heap of its own, so neither the reads nor the JSON's garbage
 * touch the platform's event loop; where it runs on the loop (an in-memory SQLite), the loop gets
 * a turn between pages, so requests are served all along.
 */
export async function dumpTables(
  db: LooseDb,
  dialect: Dialect,
  tables: readonly TableInfo[],
  dir: string,
  options: DumpOptions = {},
): Promise<Record<string, DumpedTable>> {
  const out: Record<string, DumpedTable> = {};
  let total = 0;
  for (const table of tables) {
    const path = `database/${table.name}.jsonl`;
    const writer = await HashingWriter.open(join(dir, path));
    let rows = 0;
    try {
      const live = INSTALLATION_ROWS[table.name];
      let size = FIRST_PAGE;
      for await (const batch of pages(db, dialect, table, () => size)) {
        let text = '';
        for (const row of batch) {
          if (live?.keep(String(row[live.column]))) continue;
          const record: Record<string, unknown> = {};
          for (const c of table.columns) record[c.name] = encodeValue(row[c.name]);
          text += `${JSON.stringify(record)}\n`;
          rows += 1;
        }
        size = nextPageSize(text.length, batch.length);
        await writer.write(text);
        options.onRows?.(total + rows);
        options.signal?.throwIfAborted();
        if (dialect === 'sqlite') await turn();
      }
    } finally {
      await writer.close();
    }
    total += rows;
    out[table.name] = {
      rows,
      columns: table.columns.map((c) => c.name),
      file: { path, sha256: writer.digest(), bytes: writer.bytes },
    };
  }
  return out;
}

/** Rows of the tables, for progress: an estimate on PostgreSQL, where counting would read every table. */
export async function countRows(db: LooseDb, dialect: Dialect, tables: readonly TableInfo[]) {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ n: string | number | null }>`
      select coalesce(sum(greatest(c.reltuples, 0)), 0) as n from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind = 'r'
        and c.relname in (${sql.join(tables.map((t) => t.name))})`.execute(db);
    return Number(rows[0]?.n ?? 0);
  }
  // SQLite keeps no row counts; the largest rowid of each table is a cheap upper bound (one index seek).
  let n = 0;
  for (const t of tables) {
    const { rows } = await sql<{ n: number | null }>`select max(rowid) as n from ${sql.table(t.name)}`
      .execute(db)
      .catch(() => ({ rows: [{ n: 0 }] }));
    n += Number(rows[0]?.n ?? 0);
  }
  return n;
}

/**
 * Pages of a table in key order, each read from where the last ended (keyset pagination): on the primary key
 * (row values for a key of several columns), on SQLite's rowid for a table without one, and by offset only for
 * a PostgreSQL table without a primary key (its reads are network waits, not the event loop's time).
 */
async function* pages(
  db: LooseDb,
  dialect: Dialect,
  table: TableInfo,
  pageSize: () => number,
): AsyncGenerator<Record<string, unknown>[]> {
  const key = table.primaryKey.length > 0 ? table.primaryKey : dialect === 'sqlite' ? ['rowid'] : undefined;
  if (!key) {
    const order = table.columns.map((c) => sql.ref(c.name));
    for (let offset = 0; ; ) {
      const limit = pageSize();
      const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table.name)}
        order by ${sql.join(order)} limit ${limit} offset ${offset}`.execute(db);
      offset += rows.length;
      if (rows.length > 0) yield rows;
      if (rows.length < limit) return;
    }
  }
  const columns = sql.join(key.map((k) => sql.ref(k)));
  // A rowid key is selected under a name of its own, so it is not confused with a column.
  const select = key[0] === 'rowid' && table.primaryKey.length === 0 ? sql`*, rowid as "$rowid"` : sql`*`;
  const keyOf = (row: Record<string, unknown>) =>
    key.map((k) => (k === 'rowid' && table.primaryKey.length === 0 ? row['$rowid'] : row[k]));
  let after: unknown[] | undefined;
  for (;;) {
    const from = after ? sql`where (${columns}) > (${sql.join(after.map((v) => sql`${v}`))})` : sql``;
    const limit = pageSize();
    const { rows } = await sql<Record<string, unknown>>`select ${select} from ${sql.table(table.name)}
      ${from} order by ${columns} limit ${limit}`.execute(db);
    if (rows.length > 0) yield rows;
    if (rows.length < limit) return;
    after = keyOf(rows[rows.length - 1]!);
  }
}

/** A file written with backpressure while its SHA-256 and size are computed. */
export class HashingWriter {
  private readonly hash = createHash('sha256');
  bytes = 0;

  private constructor(private readonly stream: Writable) {}

  /**
   * Synced every 8 MB off the thread that writes (openSyncingFile), so a dump of millions of rows never leaves
   * gigabytes of dirty pages for a sync on the server's thread to wait behind; not at its end, as a staged
   * file only lives until the archive is written.
   */
  static async open(file: string): Promise<HashingWriter> {
    await mkdir(dirname(file), { recursive: true });
    return new HashingWriter(await openSyncingFile(file, { syncAtEnd: false }));
  }

  async write(text: string): Promise<void> {
    const chunk = Buffer.from(text, 'utf8');
    this.hash.update(chunk);
    this.bytes += chunk.length;
    if (!this.stream.write(chunk)) {
      await new Promise<void>((resolve, reject) => {
        const drained = () => {
          this.stream.off('error', failed);
          resolve();
        };
        const failed = (err: Error) => {
          this.stream.off('drain', drained);
          reject(err);
        };
        this.stream.once('drain', drained);
        this.stream.once('error', failed);
      });
    }
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.stream.end((err?: Error | null) => (err ? reject(err) : resolve()));
    });
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
