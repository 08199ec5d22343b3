import type { Kysely, Selectable } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { SessionsTable, Tables } from '../storage/tables.js';
import { sha256Hex } from './token-hash.js';

export type SessionRow = Selectable<SessionsTable>;

/** Sessions and their rotating refresh tokens. */
export class SessionStore {
  constructor(
    private readonly db: Kysely<Tables>,
    /**
     * How `touch` commits (storage/bookkeeping.ts: unsynced on SQLite): a power loss may take the last minute's
     * `last_activity`, which only the session listings show.
     */
    private readonly bookkeeping: Bookkeeping,
  ) {}

  async create(
    userId: string,
    device: string,
    ip: string,
    ttlSeconds: number,
    refreshToken: string,
  ): Promise<SessionRow> {
    const now = nowIso();
    const row: SessionRow = {
      id: newId('ses'),
      user_id: userId,
      device: device.slice(0, 255),
      ip_address: ip,
      created_at: now,
      last_activity: now,
      expires_at: new Date(Date.now() + ttlSeconds * 1000).toISOString(),
      revoked_at: null,
      revoked_reason: null,
    };
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('sessions').values(row).execute();
      await trx
        .insertInto('refresh_tokens')
        .values({ token_hash: sha256Hex(refreshToken), session_id: row.id, created_at: now, used_at: null })
        .execute();
    });
    return row;
  }

  findById(id: string): Promise<SessionRow | undefined> {
    return this.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  listForUser(userId: string): Promise<SessionRow[]> {
    return this.db
      .selectFrom('sessions')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('last_activity', 'desc')
      .execute();
  }

  /**
   * Swaps a refresh token for a new one. `reused` means the token had already been rotated: a sign of theft,
   * so the caller revokes the whole session.
   */
  async rotate(
    refreshToken: string,
    next: string,
  ): Promise<
    | { outcome: 'rotated'; session: SessionRow }
    | { outcome: 'reused'; sessionId: string }
    | { outcome: 'unknown' }
  > {
    const hash = sha256Hex(refreshToken);
    return this.db.transaction().execute(async (trx) => {
      const token = await trx
        .selectFrom('refresh_tokens')
        .selectAll()
        .where('token_hash', '=', hash)
        .executeTakeFirst();
      if (!token) return { outcome: 'unknown' as const };
      const now = nowIso();
      // The conditional update makes two concurrent uses of one token see one winner and one reuse.
      const marked = await trx
        .updateTable('refresh_tokens')
        .set({ used_at: now })
        .where('token_hash', '=', hash)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      if (token.used_at !== null || Number(marked.numUpdatedRows) === 0) {
        return { outcome: 'reused' as const, sessionId: token.session_id };
      }
      const session = await trx
        .selectFrom('sessions')
        .selectAll()
        .where('id', '=', token.session_id)
        .executeTakeFirst();
      if (!session) return { outcome: 'unknown' as const };
      await trx
        .insertInto('refresh_tokens')
        .values({ token_hash: sha256Hex(next), session_id: session.id, created_at: now, used_at: null })
        .execute();
      await trx.updateTable('sessions').set({ last_activity: now }).where('id', '=', session.id).execute();
      return { outcome: 'rotated' as const, session: { ...session, last_activity: now } };
    });
  }

  /**
   * Whether a refresh token belongs to a session that has not ended: one `rotate` would renew (or, the token
   * being spent, revoke as reused). A read, no transaction: how a refresh past the rate limit is told apart from
   * a guess or a stale token before any write.
   */
  async ofLiveSession(refreshToken: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('refresh_tokens')
      .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
      .select('sessions.id')
      .where('refresh_tokens.token_hash', '=', sha256Hex(refreshToken))
      .where('sessions.revoked_at', 'is', null)
      .where('sessions.expires_at', '>', nowIso())
      .executeTakeFirst();
    return row !== undefined;
  }

  async touch(id: string): Promise<void> {
    await this.bookkeeping((trx) =>
      trx.updateTable('sessions').set({ last_activity: nowIso() }).where('id', '=', id).execute(),
    );
  }

  /** Revokes sessions; returns the ids it revoked. */
  async revoke(
    where: { sessionId?: string; userId?: string; exceptSessionId?: string | undefined },
    reason: string,
  ): Promise<string[]> {
    let q = this.db.selectFrom('sessions').select('id').where('revoked_at', 'is', null);
    if (where.sessionId) q = q.where('id', '=', where.sessionId);
    if (where.userId) q = q.where('user_id', '=', where.userId);
    if (where.exceptSessionId) q = q.where('id', '!=', where.exceptSessionId);
    const ids = (await q.execute()).map((r) => r.id);
    if (ids.length === 0) return [];
    await this.db
      .updateTable('sessions')
      .set({ revoked_at: nowIso(), revoked_reason: reason })
      .where('id', 'in', ids)
      .execute();
    return ids;
  }

  async countActive(): Promise<number> {
    const row = await this.db
      .selectFrom('sessions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', nowIso())
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }
}
