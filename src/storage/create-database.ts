import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PlatformConfig } from '../config/config-schema.js';
import type { Database } from './database.js';
import { createSqliteDatabase } from './sqlite/sqlite-database.js';

/**
 * `database.url` chooses the backend: `postgres://…` for PostgreSQL, else a SQLite file in `storage.data_dir`.
 * The PostgreSQL driver is loaded only when it is used, so an embedded instance never pays for it.
 */
export async function createDatabase(config: PlatformConfig): Promise<Database> {
  const url = config.database.url;
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const { createPostgresDatabase } = await import('./postgres/postgres-database.js');
    return createPostgresDatabase(url, config.database.pool_max);
  }
  let file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  if (file === '') {
    mkdirSync(resolve(config.storage.data_dir), { recursive: true });
    file = resolve(config.storage.data_dir, 'platform.db');
  }
  return createSqliteDatabase(file, { synchronous: config.database.sqlite_synchronous });
}
