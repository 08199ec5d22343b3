import {
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { SqliteReaderPool } from './sqlite-reader-pool.js';

/**
 * Kysely over a SqliteReaderPool: the same queries as on the main connection, answered from reader threads.
 * Reads only: there are no transactions, and a write fails in the thread (its connection is read-only).
 */
export class ReaderPoolDialect implements Dialect {
  constructor(private readonly pool: SqliteReaderPool) {}

  createAdapter() {
    return new SqliteAdapter();
  }

  createDriver(): Driver {
    return new ReaderPoolDriver(this.pool);
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's own dialects take Kysely<any> here.
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }

  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
}

class ReaderPoolDriver implements Driver {
  private readonly connection: DatabaseConnection;

  constructor(pool: SqliteReaderPool) {
    this.connection = {
      async executeQuery<R>(query: { sql: string; parameters: readonly unknown[] }): Promise<QueryResult<R>> {
        return { rows: (await pool.all(query.sql, query.parameters)) as R[] };
      },
      // biome-ignore lint/correctness/useYield: streaming is refused before the first row.
      async *streamQuery() {
        throw new Error('reads from reader threads are not streamed');
      },
    };
  }

  async init(): Promise<void> {}

  // Every read is a message of its own: the connection is shared, the pool spreads the reads.
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }

  async beginTransaction(): Promise<void> {
    throw new Error('reader threads run no transactions');
  }

  async commitTransaction(): Promise<void> {}

  async rollbackTransaction(): Promise<void> {}

  async releaseConnection(): Promise<void> {}

  // The pool belongs to the database, which closes it.
  async destroy(): Promise<void> {}
}
