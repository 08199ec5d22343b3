import { type Kysely, type MigrationResultSet, Migrator } from 'kysely';
import { migrationList } from './migration-list.js';

export async function migrateToLatest(db: Kysely<unknown>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrationList },
    migrationTableName: 'platform_migrations',
    migrationLockTableName: 'platform_migrations_lock',
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '?'} failed: ${(result.error as Error).message}`);
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
