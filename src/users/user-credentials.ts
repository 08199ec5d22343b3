import type { Kysely } from 'kysely';
import type { ApiKeyRow } from '../auth/api-key-store.js';
import type { SessionRow } from '../auth/session-store.js';
import type { Tables } from '../storage/tables.js';

/** A user's most recent sessions, newest activity first; older ones are history, not shown in a detail. */
export function recentSessionsOf(db: Kysely<Tables>, userId: string, limit = 50): Promise<SessionRow[]> {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('last_activity', 'desc')
    .limit(limit)
    .execute();
}

/** A user's API keys, revoked ones included (they show `is_active: false`), newest first. */
export function apiKeysOf(db: Kysely<Tables>, userId: string, limit = 100): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
}
