import type { Migration } from 'kysely';
import * as core from './migrations/0001-core.js';

/**
 * Every migration, in order. Feature modules add their own file under `storage/migrations/` and a line here;
 * the same migrations run on SQLite and PostgreSQL.
 */
export const migrationList: Record<string, Migration> = {
  '0001-core': core,
};
