import { type Kysely, type Selectable, sql } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { ApiKeysTable, Tables } from '../storage/tables.js';
import { randomToken, sha256Hex } from './token-hash.js';

export type ApiKeyRow = Selectable<ApiKeysTable>;

/** What every API key starts with, so a credential can be told a key without a look-up. */
export const API_KEY_PREFIX = 'plat_';

/** API keys: `plat_` + 43 random characters, stored as SHA-256 hashes with a masked preview. */
export class ApiKeyStore {
  constructor(
    private readonly db: Kysely<Tables>,
    /**
     * How the counted uses commit (storage/bookkeeping.ts: unsynced on SQLite): a power loss may take the last
     * seconds of use counts and `last_used`, figures nobody is answered about when they are written.
     */
    private readonly bookkeeping: Bookkeeping,
  ) {}

  async create(
    userId: string,
    name: string,
    scopes: string[],
    expiresAt: string | null,
  ): Promise<{ row: ApiKeyRow; key: string }> {
    const key = `${API_KEY_PREFIX}${randomToken(32)}`;
    const row: ApiKeyRow = {
      id: newId('key'),
      user_id: userId,
      name,
      key_hash: sha256Hex(key),
      key_preview: `plat_…${key.slice(-4)}`,
      scopes: JSON.stringify(scopes),
      created_at: nowIso(),
      expires_at: expiresAt,
      last_used: null,
      usage_count: 0,
      revoked_at: null,
    };
    await this.db.insertInto('api_keys').values(row).execute();
    return { row, key };
  }

  findByKey(key: string): Promise<ApiKeyRow | undefined> {
    return this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('key_hash', '=', sha256Hex(key))
      .executeTakeFirst();
  }

  listForUser(userId: string): Promise<ApiKeyRow[]> {
    return this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at', 'desc')
      .execute();
  }

  async revoke(userId: string, id: string): Promise<boolean> {
    const r = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: nowIso() })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Adds each key's `uses` to its count; `at` (when it was last used) becomes `last_used` unless that is later. */
  async recordUses(uses: readonly { id: string; uses: number; at: string }[]): Promise<void> {
    if (uses.length === 0) return;
    await this.bookkeeping(async (trx) => {
      for (const use of uses) {
        await trx
          .updateTable('api_keys')
          .set((eb) => ({
            last_used: sql<string>`case when ${eb.ref('last_used')} is null or ${eb.ref('last_used')} < ${use.at} then ${use.at} else ${eb.ref('last_used')} end`,
            usage_count: eb('usage_count', '+', use.uses),
          }))
          .where('id', '=', use.id)
          .execute();
      }
    });
  }
}

export const scopesOf = (row: Pick<ApiKeyRow, 'scopes'>): string[] => JSON.parse(row.scopes) as string[];
