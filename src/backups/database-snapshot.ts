import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Kysely, SqliteDialect, sql } from 'kysely';
import type { Database, Dialect } from '../storage/database.js';
import { SqliteDriver } from '../storage/sqlite/better-sqlite3.js';
import { createSqliteDatabase } from '../storage/sqlite/sqlite-database.js';
import type { LooseDb } from './database-schema.js';

/**
 * Runs `read` against a consistent, unchanging view of the database, so every table of a dump is from the
 * same moment, without holding up the platform's own requests.
 * - PostgreSQL: a read-only REPEATABLE READ transaction (here on the platform's pool; a backup instead reads it
 *   on a connection of its own in a worker thread: `readOwnSnapshot`, started by dump-in-worker).
 * - SQLite (a file, in WAL mode): a read transaction on a connection of its own, opened read-only on the same
 *   file. WAL gives that reader the database as it was at its first read for as long as the transaction
 *   lasts, while the platform's connection goes on writing; the dump reads it in small pages (table-dump).
 *   This runs `read` on the calling thread; a backup instead reads a file's snapshot in a worker thread
 *   (`readOwnSnapshot` in table-dump-worker, started by dump-in-worker), off the event loop.
 *   The write-ahead log cannot be checkpointed past that snapshot meanwhile, so it grows by what is written
 *   during the dump, and shrinks back at the next checkpoints.
 * - SQLite in memory (no file to open twice): `VACUUM INTO` a copy in `workDir`, read on its own connection.
 */
export async function withSnapshot<T>(
  database: Database,
  workDir: string,
  read: (db: LooseDb) => Promise<T>,
): Promise<T> {
  if (database.dialect === 'postgres') return readPostgresSnapshot(database.db as unknown as LooseDb, read);
  const file = await sqliteFile(database);
  if (file) return readSqliteSnapshot(file, read);
  const copy = join(workDir, 'snapshot.db');
  await sql`vacuum into ${copy}`.execute(database.db);
  const opened = createSqliteDatabase(copy);
  try {
    return await read(opened.db as unknown as LooseDb);
  } finally {
    await opened.close();
    for (const suffix of ['', '-wal', '-shm']) await rm(copy + suffix, { force: true });
  }
}

/**
 * `read` in a read-only REPEATABLE READ transaction on `db` (the platform's pool, or a worker's connection of
 * its own): every statement of it sees the database as it was at its first.
 */
export function readPostgresSnapshot<T>(db: LooseDb, read: (db: LooseDb) => Promise<T>): Promise<T> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      await sql`set transaction read only`.execute(trx);
      return read(trx);
    });
}

/**
 * A database a worker thread can open a connection of its own to: a SQLite file, or a PostgreSQL server by the
 * URL the platform's pool connects with (`Database.connectionString`).
 */
export type SnapshotSource = { dialect: 'sqlite'; file: string } | { dialect: 'postgres'; url: string };

/** Where a worker thread can read `database`'s snapshot from; undefined for an in-memory SQLite. */
export async function snapshotSource(database: Database): Promise<SnapshotSource | undefined> {
  if (database.dialect === 'postgres') {
    return database.connectionString ? { dialect: 'postgres', url: database.connectionString } : undefined;
  }
  const file = await sqliteFile(database);
  return file ? { dialect: 'sqlite', file } : undefined;
}

/**
 * `read` against a snapshot of `source` on a connection of its own, opened here and closed at the end, whether
 * `read` succeeds or fails: for a worker thread (table-dump-worker). The PostgreSQL driver is loaded only for a
 * PostgreSQL source, with the connection settings of the platform's pool (postgres-database).
 */
export async function readOwnSnapshot<T>(
  source: SnapshotSource,
  read: (db: LooseDb, dialect: Dialect) => Promise<T>,
): Promise<T> {
  if (source.dialect === 'sqlite') return readSqliteSnapshot(source.file, (db) => read(db, 'sqlite'));
  const { openPostgresConnection } = await import('../storage/postgres/postgres-database.js');
  const db = openPostgresConnection<Record<string, Record<string, unknown>>>(source.url);
  try {
    return await readPostgresSnapshot(db, (trx) => read(trx, 'postgres'));
  } finally {
    await db.destroy();
  }
}

/** The file of the main SQLite database; undefined for an in-memory one. */
export async function sqliteFile(database: Database): Promise<string | undefined> {
  const { rows } = await sql<{ file: string | null }>`
    select file from pragma_database_list where name = 'main'`.execute(database.db);
  return rows[0]?.file || undefined;
}

/**
 * `read` in a read transaction on a read-only connection of its own to a SQLite file (WAL): the snapshot is the
 * database at the transaction's first read. A backup of a file runs this in a worker thread
 * (table-dump-worker), so its reads never hold the platform's event loop.
 */
export async function readSqliteSnapshot<T>(file: string, read: (db: LooseDb) => Promise<T>): Promise<T> {
  const connection = new SqliteDriver(file, { readonly: true, fileMustExist: true });
  connection.pragma('busy_timeout = 5000');
  const db: LooseDb = new Kysely({ dialect: new SqliteDialect({ database: connection }) });
  try {
    await sql`begin`.execute(db);
    // The snapshot is taken at the first read of the transaction, now.
    await sql`select count(*) from sqlite_master`.execute(db);
    return await read(db);
  } finally {
    await sql`rollback`.execute(db).catch(() => undefined);
    await db.destroy();
  }
}

/** The migrations applied to a database, in order: the archive's schema version. */
export async function appliedMigrations(db: LooseDb): Promise<string[]> {
  const rows = await db.selectFrom('platform_migrations').select('name').orderBy('name').execute();
  return rows.map((r) => String(r['name']));
}
