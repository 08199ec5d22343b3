import type { Kysely, Selectable } from 'kysely';
import { nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';
import type { PluginSecretSealer } from './plugin-secret-sealer.js';
import type { PluginsTable } from './plugin-tables.js';

export type PluginRow = Selectable<PluginsTable>;
export type PluginStatus = 'installed' | 'active' | 'disabled' | 'error' | 'updating';

/**
 * The `plugins` table (what is installed, in which state: the same for every instance) and the package archives.
 * Rows come and go with their configuration in clear; in the table its secrets are sealed (`PluginSecretSealer`).
 */
export class PluginStore {
  constructor(
    private readonly db: Kysely<Tables>,
    private readonly sealer: PluginSecretSealer,
  ) {}

  async list(): Promise<PluginRow[]> {
    const rows = await this.db.selectFrom('plugins').selectAll().orderBy('id').execute();
    return rows.map((r) => this.opened(r));
  }

  async find(id: string): Promise<PluginRow | undefined> {
    const row = await this.db.selectFrom('plugins').selectAll().where('id', '=', id).executeTakeFirst();
    return row && this.opened(row);
  }

  async insert(row: PluginRow): Promise<void> {
    await this.db
      .insertInto('plugins')
      .values({ ...row, config: this.sealer.seal(row.manifest, row.config) })
      .execute();
  }

  async update(id: string, changes: Partial<Omit<PluginRow, 'id'>>): Promise<void> {
    const set = { ...changes, updated_at: changes.updated_at ?? nowIso() };
    if (changes.config !== undefined) {
      // Which values are secret is the manifest's to say: the new one when it changes too.
      const manifest =
        changes.manifest ??
        (await this.db.selectFrom('plugins').select('manifest').where('id', '=', id).executeTakeFirst())
          ?.manifest;
      if (manifest === undefined) return;
      set.config = this.sealer.seal(manifest, changes.config);
    }
    await this.db.updateTable('plugins').set(set).where('id', '=', id).execute();
  }

  /**
   * Seals the secrets of rows written before they were sealed. Each row is rewritten only if it is unchanged
   * since it was read, so an instance starting beside running ones never undoes a newer change.
   */
  async sealClearSecrets(): Promise<void> {
    const rows = await this.db.selectFrom('plugins').select(['id', 'manifest', 'config']).execute();
    for (const r of rows) {
      if (!this.sealer.holdsClearSecret(r.manifest, r.config)) continue;
      const config = this.sealer.seal(r.manifest, this.sealer.open(r.manifest, r.config));
      await this.db
        .updateTable('plugins')
        .set({ config })
        .where('id', '=', r.id)
        .where('config', '=', r.config)
        .execute();
    }
  }

  private opened(row: PluginRow): PluginRow {
    return { ...row, config: this.sealer.open(row.manifest, row.config) };
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
