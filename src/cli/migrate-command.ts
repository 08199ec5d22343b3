import type { BootConfig } from '../config/load-config.js';
import { createDatabase } from '../storage/create-database.js';
import { migrateToLatest } from '../storage/migrate.js';

/** Applies pending migrations and says which, or that there were none. */
export async function migrateCommand(boot: BootConfig, write: (text: string) => void): Promise<number> {
  const database = await createDatabase(boot.config);
  try {
    const applied = await migrateToLatest(database.db as never);
    write(
      applied.length > 0
        ? `applied ${applied.length} migration${applied.length === 1 ? '' : 's'}: ${applied.join(', ')}\n`
        : 'database is up to date\n',
    );
    return 0;
  } finally {
    await database.close();
  }
}
