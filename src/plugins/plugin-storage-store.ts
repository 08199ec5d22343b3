import type { Kysely } from 'kysely';
import { AppError } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';

const MAX_KEY = 512;
const MAX_VALUE_BYTES = 1024 * 1024;

const badInput = (field: string, reason: string) =>
  new AppError('VALIDATION_ERROR', `storage ${field} ${reason}`, { details: { field, reason } });

/** `ctx.storage`: a plugin's persistent key-value pairs (JSON values), shared by every instance. */
export class PluginStorageStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async get(pluginId: string, key: string): Promise<unknown> {
    checkKey(key);
    const row = await this.db
      .selectFrom('plugin_storage')
      .select('value')
      .where('plugin_id', '=', pluginId)
      .where('key', '=', key)
      .executeTakeFirst();
    return row === undefined ? undefined : JSON.parse(row.value);
  }

  async set(pluginId: string, key: string, value: unknown): Promise<void> {
    checkKey(key);
    const json = JSON.stringify(value);
    if (json === undefined) throw badInput('value', 'must be JSON-serializable');
    if (Buffer.byteLength(json) > MAX_VALUE_BYTES)
      throw badInput('value', `exceeds ${MAX_VALUE_BYTES} bytes`);
    const now = nowIso();
    await this.db
      .insertInto('plugin_storage')
      .values({ plugin_id: pluginId, key, value: json, updated_at: now })
      .onConflict((oc) => oc.columns(['plugin_id', 'key']).doUpdateSet({ value: json, updated_at: now }))
      .execute();
  }

  async delete(pluginId: string, key: string): Promise<boolean> {
    checkKey(key);
    const result = await this.db
      .deleteFrom('plugin_storage')
      .where('plugin_id', '=', pluginId)
      .where('key', '=', key)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async keys(pluginId: string, prefix = ''): Promise<string[]> {
    const rows = await this.db
      .selectFrom('plugin_storage')
      .select('key')
      .where('plugin_id', '=', pluginId)
      .orderBy('key')
      .execute();
    return rows.map((r) => r.key).filter((k) => k.startsWith(prefix));
  }

  async removeAll(pluginId: string): Promise<void> {
    await this.db.deleteFrom('plugin_storage').where('plugin_id', '=', pluginId).execute();
  }
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY) {
    throw badInput('key', `must be a string of 1 to ${MAX_KEY} characters`);
  }
}
