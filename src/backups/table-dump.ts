import { createHash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { sql } from 'kysely';
import { INSTALLATION_ROWS } from './backup-scope.js';
import type { LooseDb, TableInfo } from './database-schema.js';
import { encodeValue } from './row-codec.js';

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

const BATCH = 1000;

/**
 * Writes one JSON Lines file per table (`<dir>/database/<table>.jsonl`, one object per row) from a database
 * that does not change underneath (a snapshot), in pages, so no table is ever held in memory whole.
 */
export async function dumpTables(
  db: LooseDb,
  tables: readonly TableInfo[],
  dir: string,
): Promise<Record<string, DumpedTable>> {
  const out: Record<string, DumpedTable> = {};
  for (const table of tables) {
    const path = `database/${table.name}.jsonl`;
    const writer = await HashingWriter.open(join(dir, path));
    let rows = 0;
    try {
      const live = INSTALLATION_ROWS[table.name];
      for await (const batch of pages(db, table)) {
        for (const row of batch) {
          if (live?.keep(String(row[live.column]))) continue;
          const record: Record<string, unknown> = {};
          for (const c of table.columns) record[c.name] = encodeValue(row[c.name]);
          await writer.write(`${JSON.stringify(record)}\n`);
          rows += 1;
        }
      }
    } finally {
      await writer.close();
    }
    out[table.name] = {
      rows,
      columns: table.columns.map((c) => c.name),
      file: { path, sha256: writer.digest(), bytes: writer.bytes },
    };
  }
  return out;
}

/** Pages of a table: keyset pagination on a one-column primary key, else ordered offsets. */
async function* pages(db: LooseDb, table: TableInfo): AsyncGenerator<Record<string, unknown>[]> {
  const base = () => db.selectFrom(table.name).selectAll();
  const [key, ...rest] = table.primaryKey;
  if (key !== undefined && rest.length === 0) {
    let after: unknown;
    for (;;) {
      let q = base();
      if (after !== undefined) q = q.where(sql.ref(key), '>', after);
      const rows = (await q.orderBy(sql.ref(key)).limit(BATCH).execute()) as Record<string, unknown>[];
      if (rows.length > 0) yield rows;
      if (rows.length < BATCH) return;
      after = rows[rows.length - 1]?.[key];
    }
  }
  const order = table.primaryKey.length > 0 ? table.primaryKey : table.columns.map((c) => c.name);
  for (let offset = 0; ; offset += BATCH) {
    let q = base();
    for (const c of order) q = q.orderBy(sql.ref(c));
    const rows = (await q.limit(BATCH).offset(offset).execute()) as Record<string, unknown>[];
    if (rows.length > 0) yield rows;
    if (rows.length < BATCH) return;
  }
}

/** A file written with backpressure while its SHA-256 and size are computed. */
export class HashingWriter {
  private readonly hash = createHash('sha256');
  bytes = 0;

  private constructor(private readonly stream: WriteStream) {}

  static async open(file: string): Promise<HashingWriter> {
    await mkdir(dirname(file), { recursive: true });
    const stream = createWriteStream(file);
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', reject);
    });
    return new HashingWriter(stream);
  }

  async write(text: string): Promise<void> {
    const chunk = Buffer.from(text, 'utf8');
    this.hash.update(chunk);
    this.bytes += chunk.length;
    if (!this.stream.write(chunk)) {
      await new Promise<void>((resolve, reject) => {
        this.stream.once('drain', resolve);
        this.stream.once('error', reject);
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
