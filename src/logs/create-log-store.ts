import type { Kysely } from 'kysely';
import type { Database } from '../storage/database.js';
import { KyselyLogStore } from './kysely-log-store.js';
import type { LogTables } from './log-tables.js';
import { createSqliteLogStore } from './sqlite/sqlite-log-store.js';

/**
 * The log store for the platform's storage: a separate SQLite file in embedded mode, the `log_entries`
 * table of the main database (migration 0004) on PostgreSQL, where one more writer costs nothing.
 */
export async function createLogStore(database: Database, dataDir: string): Promise<KyselyLogStore> {
  if (database.dialect === 'sqlite') return createSqliteLogStore(dataDir);
  // The main connection belongs to the platform: closing the log store leaves it open.
  const db = database.db as unknown as Kysely<LogTables>;
  return new KyselyLogStore('postgres', db, async () => {}, database.reads as unknown as Kysely<LogTables>);
}
