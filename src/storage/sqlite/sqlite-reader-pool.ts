import { SqliteThread, sqliteThreadSource } from './sqlite-thread.js';

/**
 * A reader thread: a read-only connection to the database file, which runs the statements it is sent one
 * after the other and posts their rows back. Over the write-ahead log it reads the last committed state
 * beside the writer, never blocking it.
 */
const WORKER_SOURCE = `${sqliteThreadSource(['query_only = ON', 'busy_timeout = 5000', `cache_size = -${8 * 1024}`], 200)}
serve((m) => {
  const statement = prepared(m.sql);
  if (!statement.reader) throw new Error('a reader thread runs reads only');
  return { rows: statement.all(m.parameters) };
});
`;

/** How much lower than the server's thread a reader thread's CPU priority is (nice 10 of 19). */
const READER_NICENESS = 10;

export interface SqliteReaderPoolOptions {
  /** Threads, each with its own connection; reads beyond that wait for one (default 2: the machine's cores). */
  threads?: number;
  /** Functions to register that lower text as JavaScript does (see unicode-lower.ts). */
  lowerFunctions?: readonly string[];
}

/**
 * Threads that run read-only SQL on a SQLite file in WAL mode. better-sqlite3 is synchronous: a read whose
 * cost grows with the store (a count, a deep page, a scan) held the whole server on the thread that ran it.
 * Here it holds only a reader thread. Threads start at the first read and keep the process alive only while
 * they have work.
 */
export class SqliteReaderPool {
  private readonly readers: (SqliteThread | undefined)[];
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly options: SqliteReaderPoolOptions = {},
  ) {
    this.readers = new Array(Math.max(1, options.threads ?? 2)).fill(undefined);
  }

  /** Runs one read-only statement on the least busy thread; resolves to its rows. */
  async all(sql: string, parameters: readonly unknown[]): Promise<unknown[]> {
    if (this.closed) throw new Error('the database is closed');
    const answer = await this.leastBusy().request({ sql, parameters });
    return (answer['rows'] as unknown[] | undefined) ?? [];
  }

  /** Stops every thread, failing the reads still waiting. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.readers.map((reader) => reader?.stop()));
  }

  /** An idle thread, else a new one while there is room (each takes a few hundred ms to start), else the least busy. */
  private leastBusy(): SqliteThread {
    let best: SqliteThread | undefined;
    let free = -1;
    for (let i = 0; i < this.readers.length; i++) {
      const reader = this.readers[i];
      if (!reader) free = free < 0 ? i : free;
      else if (!best || reader.busy < best.busy) best = reader;
    }
    if (best && (best.busy === 0 || free < 0)) return best;
    const started = new SqliteThread(
      WORKER_SOURCE,
      { file: this.file, lowerFunctions: this.options.lowerFunctions ?? [], niceness: READER_NICENESS },
      // The next read starts a new thread in this slot.
      (stopped) => {
        if (this.readers[free] === stopped) this.readers[free] = undefined;
      },
    );
    this.readers[free] = started;
    return started;
  }
}
