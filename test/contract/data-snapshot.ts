import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Platform } from '../../src/server.js';

/**
 * Tables that change on any request, valid or not, by design: the request log lines and metric samples that
 * the platform records about its own traffic, and the session's last activity. Everything else must be left
 * exactly as it was by a request the platform refused.
 */
const VOLATILE = new Set(['log_entries', 'metric_samples', 'kysely_migration', 'kysely_migration_lock']);

/** Row count and a checksum of every table, to prove that refused requests changed no data. */
export async function snapshotData(platform: Platform): Promise<Record<string, string>> {
  const db = platform.context.database.db;
  const tables = await db.introspection.getTables();
  const out: Record<string, string> = {};
  for (const table of tables) {
    if (VOLATILE.has(table.name)) continue;
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table.name)}`.execute(db);
    const lines = rows.rows
      .map((row) => JSON.stringify(Object.entries(row).sort(([a], [b]) => a.localeCompare(b))))
      .sort();
    out[table.name] = `${lines.length} rows, ${createHash('sha256').update(lines.join('\n')).digest('hex')}`;
  }
  return out;
}
