import type { Kysely, Selectable } from 'kysely';
import { nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';
import type { PluginsTable } from './plugin-tables.js';

export type PluginRow = Selectable<PluginsTable>;
export type PluginStatus = 'installed' | 'active' | 'disabled' | 'error' | 'updating';

/** The `plugins` table (what is installed, in which state: the same for every instance) and the package archives. */
export class PluginStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async list(): Promise<PluginRow[]> {
    return this.db.selectFrom('plugins').selectAll().orderBy('id').execute();
  }

  async find(id: string): Promise<PluginRow | undefined> {
    return this.db.selectFrom('plugins').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insert(row: PluginRow): Promise<void> {
    await this.db.insertInto('plugins').values(row).execute();
  }

  async update(id: string, changes: Partial<Omit<PluginRow, 'id'>>): Promise<void> {
    await this.db
      .updateTable('plugins')
      .set({ ...changes, updated_at: changes.updated_at ?? nowIso() })
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('plugin_packages').where('plugin_id', '=', id).execute();
      await trx.deleteFrom('plugin_storage').where('plugin_id', '=', id).execute();
      await trx.deleteFrom('plugins').where('id', '=', id).execute();
    });
  }

  /** Keeps the archive of a version (idempotent), so every instance can unpack it. */
  async savePackage(id: string, version: string, sha256: string, archive: Buffer): Promise<void> {
    await this.db
      .insertInto('plugin_packages')
      .values({
        plugin_id: id,
        version,
        sha256,
        size_bytes: archive.length,
        archive: archive.toString('base64'),
        created_at: nowIso(),
      })
      .onConflict((oc) =>
        oc.columns(['plugin_id', 'version']).doUpdateSet({
          sha256,
          size_bytes: archive.length,
          archive: archive.toString('base64'),
        }),
      )
      .execute();
  }

  async loadPackage(id: string, version: string): Promise<{ sha256: string; archive: Buffer } | undefined> {
    const row = await this.db
      .selectFrom('plugin_packages')
      .select(['sha256', 'archive'])
      .where('plugin_id', '=', id)
      .where('version', '=', version)
      .executeTakeFirst();
    return row ? { sha256: row.sha256, archive: Buffer.from(row.archive, 'base64') } : undefined;
  }

  /** Removes archives of versions no longer kept (neither current nor the rollback version). */
  async prunePackages(id: string, keep: readonly string[]): Promise<void> {
    let q = this.db.deleteFrom('plugin_packages').where('plugin_id', '=', id);
    if (keep.length > 0) q = q.where('version', 'not in', [...keep]);
    await q.execute();
  }
}
