import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Database } from '../storage/database.js';

/** Bytes of every file under a folder (the SQLite files, the log store, backups, plugin packages). */
export async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += await folderBytes(path);
    else if (e.isFile())
      total += await lstat(path).then(
        (s) => s.size,
        () => 0,
      );
  }
  return total;
}

/**
 * What the platform occupies on disk: its data folder, plus on PostgreSQL the database itself
 * (`pg_database_size`), which lives on the database server rather than in the folder.
 */
export async function diskUsageBytes(database: Database, dataDir: string): Promise<number> {
  let bytes = await folderBytes(dataDir);
  if (database.dialect === 'postgres') {
    const r = await sql<{
      size: number | string;
    }>`select pg_database_size(current_database()) as size`.execute(database.db);
    bytes += Number(r.rows[0]?.size ?? 0);
  }
  return bytes;
}
