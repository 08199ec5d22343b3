import { performance } from 'node:perf_hooks';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../database.js';
import { preparedName } from '../dialect-sql.js';
import type { Tables } from '../tables.js';

// Counts come back as int8 strings; every count the platform uses fits a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/**
 * How every connection of the platform to `url` is opened: the server's pool and a worker thread's connection
 * of its own (a backup's dump, src/backups/dump-in-worker.ts), so both connect alike. TLS and the other
 * connection settings come from the URL (`sslmode`, `application_name`, `options`, …) and pg's `PG*`
 * environment variables, which worker threads share.
 */
function connectionSettings(url: string): pg.PoolConfig {
  return { connectionString: url, connectionTimeoutMillis: 5000 };
}

/** A pool of `max` connections to `url`, whose lost connections never crash the process. */
function openPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({ ...connectionSettings(url), max, idleTimeoutMillis: 30_000 });
  // An idle client that loses its server must not crash the process; the next query reports the failure.
  pool.on('error', () => {});
  // So must a checked-out client that loses it between two statements (inside a transaction, say): pg emits
  // 'error' on the client, and without a listener that ends the process. Its next query fails instead, and
  // pg-pool drops the broken client on release.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * One connection to `url`, opened as the platform's pool opens its own, for a worker thread (a backup's
 * dump): `destroy()` closes it.
 */
export function openPostgresConnection<T>(url: string): Kysely<T> {
  return new Kysely<T>({ dialect: new PostgresDialect({ pool: openPool(url, 1) }) });
}

export function createPostgresDatabase(url: string, max: number): Database {
  const pool = openPool(url, max);
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: withPreparedStatements(pool) }) });
  let closed = false;
  return {
    db,
    reads: db,
    dialect: 'postgres',
    connectionString: url,
    changeStamp: () => undefined,
    async ping() {
      const start = performance.now();
      await sql`select 1`.execute(db);
      return performance.now() - start;
    },
    pool: () => ({
      active: pool.totalCount - pool.idleCount,
      idle: pool.idleCount,
      total: pool.totalCount,
      waiting: pool.waitingCount,
    }),
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}

/**
 * The pool as Kysely sees it, whose clients run the statements of `preparedSql` by name: pg prepares such a
 * statement on a connection the first time and reuses it there after.
 */
function withPreparedStatements(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect();
      return {
        // A cursor (a streamed query) goes through as it is: pg answers it with the cursor itself.
        query: ((text: string, values: unknown[]) => {
          const name = typeof text === 'string' ? preparedName(text) : undefined;
          return name === undefined ? client.query(text, values) : client.query({ name, text, values });
        }) as unknown as PostgresPoolClient['query'],
        release: (err?: Error | boolean) => client.release(err),
      };
    },
    end: () => pool.end(),
  };
}
