import { performance } from 'node:perf_hooks';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../database.js';
import type { Tables } from '../tables.js';

// Counts come back as int8 strings; every count the platform uses fits a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export function createPostgresDatabase(url: string, max: number): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client that loses its server must not crash the process; the next query reports the failure.
  pool.on('error', () => {});
  // So must a checked-out client that loses it between two statements (inside a transaction, say): pg emits
  // 'error' on the client, and without a listener that ends the process. Its next query fails instead, and
  // pg-pool drops the broken client on release.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;
  return {
    db,
    dialect: 'postgres',
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
