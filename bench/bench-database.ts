/**
 * Databases of the benchmarks' bare baselines: the platform's own schema (every migration: the same tables,
 * indexes and triggers), reached afterwards through the raw driver, so a baseline writes the very rows the
 * platform writes without any of the platform's code on the way.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { migrateToLatest } from '../src/storage/migrate.js';
import { SqliteDriver } from '../src/storage/sqlite/better-sqlite3.js';
import { createSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';

export const PG_ADMIN = process.env.PLATFORM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}

/** A new PostgreSQL database (`name`, dropped first if left over); `drop` removes it. */
export async function tempPostgresDatabase(
  name: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  await adminQuery(`drop database if exists ${name} with (force)`);
  await adminQuery(`create database ${name}`);
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => adminQuery(`drop database if exists ${name} with (force)`) };
}

/** A PostgreSQL database with the platform's schema, and a raw `pg` pool on it. */
export async function migratedPostgres(
  name: string,
  max: number,
): Promise<{ pool: pg.Pool; drop: () => Promise<void> }> {
  const { url, drop } = await tempPostgresDatabase(name);
  const { createPostgresDatabase } = await import('../src/storage/postgres/postgres-database.js');
  const platformDb = createPostgresDatabase(url, 2);
  await migrateToLatest(platformDb.db as never);
  await platformDb.close();
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => {});
  return {
    pool,
    drop: async () => {
      await pool.end();
      await drop();
    },
  };
}

/**
 * A SQLite file (in a new temporary folder) with the platform's schema, opened with the raw driver in WAL
 * mode at `synchronous` (the platform's own connection runs `FULL`; its delivery bookkeeping commits `NORMAL`).
 */
export async function migratedSqlite(
  synchronous: 'FULL' | 'NORMAL',
): Promise<{ db: BetterSqlite3.Database; remove: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-bare-'));
  const file = join(dir, 'bare.db');
  const platformDb = createSqliteDatabase(file, { synchronous: 'full' });
  await migrateToLatest(platformDb.db as never);
  await platformDb.close();
  const db = new SqliteDriver(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  return {
    db,
    remove: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The columns and values of an active webhook subscription matching every event (the outbox rows need one). */
export function subscriptionRow(id: string, url: string): Record<string, string | number> {
  const at = new Date().toISOString();
  return {
    id,
    owner_id: 'bench',
    name: id,
    status: 'active',
    event_patterns: '["*"]',
    delivery_method: 'webhook',
    webhook_url: url,
    retry_policy: '{}',
    timeout_seconds: 10,
    batch_config: '{}',
    created_at: at,
    updated_at: at,
  };
}

/** `insert into "<table>" (…) values (…)` for these columns, with `?` (SQLite) or `$n` (PostgreSQL). */
export function insertSql(table: string, columns: readonly string[], dialect: 'sqlite' | 'postgres'): string {
  const marks = columns.map((_, i) => (dialect === 'sqlite' ? '?' : `$${i + 1}`));
  return `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values (${marks.join(', ')})`;
}
