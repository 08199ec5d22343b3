import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Platform } from '../../src/server.js';

/**
 * What changes on any authenticated request, valid or not, by design: the log lines and metric samples the
 * platform records about its own traffic, and a credential's last use. Everything else must be left exactly
 * as it was by a request the platform refused.
 */
const VOLATILE = new Set(['log_entries', 'metric_samples', 'kysely_migration', 'kysely_migration_lock']);
const VOLATILE_COLUMNS: Record<string, string[]> = {
  sessions: ['last_activity'],
  api_keys: ['last_used', 'usage_count'],
};

/** Row count and a checksum of every table, to prove that refused requests changed no data. */
export async function snapshotData(platform: Platform): Promise<Record<string, string>> {
  const db = platform.context.database.db;
  const tables = await db.introspection.getTables();
  const out: Record<string, string> = {};
  for (const table of tables) {
    if (VOLATILE.has(table.name)) continue;
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table.name)}`.execute(db);
    const skip = new Set(VOLATILE_COLUMNS[table.name] ?? []);
    const lines = rows.rows
      .map((row) =>
        JSON.stringify(
          Object.entries(row)
            .filter(([column]) => !skip.has(column))
            .sort(([a], [b]) => a.localeCompare(b)),
        ),
      )
      .sort();
    out[table.name] = `${lines.length} rows, ${createHash('sha256').update(lines.join('\n')).digest('hex')}`;
  }
  return out;
}
