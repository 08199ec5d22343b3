import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import type { SnapshotSource } from '../../src/backups/database-snapshot.js';
import { SqliteDriver } from '../../src/storage/sqlite/better-sqlite3.js';
import { backend, databaseUrl, PG_ADMIN_URL } from '../helpers/backends.js';

/** A database of its own for a dump test, on the test run's backend, and how to remove it. */
export interface DumpSource {
  source: SnapshotSource;
  /** The database's name on PostgreSQL (for pg_stat_activity); undefined on SQLite. */
  database: string | undefined;
  drop(): Promise<void>;
}

/**
 * A new database made by `statements` (the SQL of the test's backend: `sqlite` on the embedded project, a
 * database of its own on the PostgreSQL server on the cluster one), for the table dump to read
 * (dump-in-worker). `dir` holds the SQLite file. `query` adds parameters to the PostgreSQL URL.
 */
export async function createDumpSource(
  dir: string,
  name: string,
  statements: { sqlite: string; postgres: string },
  query = '',
): Promise<DumpSource> {
  if (backend === 'sqlite') {
    const file = join(dir, `${name}.sqlite`);
    const db = new SqliteDriver(file);
    db.pragma('journal_mode = wal');
    db.exec(statements.sqlite);
    db.close();
    return { source: { dialect: 'sqlite', file }, database: undefined, drop: async () => undefined };
  }
  const database = `platform_test_dump_${randomBytes(6).toString('hex')}`;
  await admin(`create database ${database}`);
  const url = databaseUrl(database);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statements.postgres);
  } finally {
    await client.end();
  }
  return {
    source: { dialect: 'postgres', url: query ? `${url}?${query}` : url },
    database,
    drop: () => admin(`drop database if exists ${database} with (force)`).then(() => undefined),
  };
}

/** The connections open to `database` on the PostgreSQL server, by application name. */
export async function connectionsTo(database: string): Promise<string[]> {
  const rows = await admin('select application_name from pg_stat_activity where datname = $1', [database]);
  return rows.map((r) => String(r['application_name']));
}

async function admin(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}
