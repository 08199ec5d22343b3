import type { Kysely } from 'kysely';
import { nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';

/** Small JSON values shared by every instance through the database (maintenance, secrets made at first start). */
export class SystemStateStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async get<T>(key: string): Promise<T | undefined> {
    const row = await this.db
      .selectFrom('system_state')
      .select('value')
      .where('key', '=', key)
      .executeTakeFirst();
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async set(key: string, value: unknown): Promise<void> {
    const now = nowIso();
    const text = JSON.stringify(value);
    await this.db
      .insertInto('system_state')
      .values({ key, value: text, updated_at: now })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: text, updated_at: now }))
      .execute();
  }

  async delete(key: string): Promise<void> {
    await this.db.deleteFrom('system_state').where('key', '=', key).execute();
  }

  /** Stores `value` unless the key already has one; returns whichever value is stored (first writer wins). */
  async getOrCreate<T>(key: string, make: () => T): Promise<T> {
    const text = JSON.stringify(make());
    await this.db
      .insertInto('system_state')
      .values({ key, value: text, updated_at: nowIso() })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return (await this.get<T>(key)) as T;
  }
}
