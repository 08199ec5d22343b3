import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PlatformConfig } from '../config/config-schema.js';
import type { Database } from './database.js';
import { createPostgresDatabase } from './postgres/postgres-database.js';
import { createSqliteDatabase } from './sqlite/sqlite-database.js';

/** `database.url` chooses the backend: `postgres://…` for PostgreSQL, else a SQLite file in `storage.data_dir`. */
export function createDatabase(config: PlatformConfig): Database {
  const url = config.database.url;
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    return createPostgresDatabase(url, config.database.pool_max);
  }
  let file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  if (file === '') {
    mkdirSync(resolve(config.storage.data_dir), { recursive: true });
    file = resolve(config.storage.data_dir, 'platform.db');
  }
  return createSqliteDatabase(file);
}
