import type { Kysely } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { Tables } from '../storage/tables.js';

export interface FailedLogin {
  username: string;
  userId: string | null;
  ipAddress: string;
  reason: string;
}

/** Failed logins as they happened (from `auth.login_failed` events), for the security metrics and rules. */
export class FailedLoginStore {
  constructor(
    private readonly db: Kysely<Tables>,
    /**
     * How records and the pruning commit (storage/bookkeeping.ts: unsynced on SQLite). Nobody is answered about
     * them (the login already failed); a power loss may take the last seconds of records, and with them a few
     * attempts from the brute-force counts, which the attempts that follow make up. A flood of failed logins
     * no longer syncs the disk once each on the server's thread.
     */
    private readonly writes: Bookkeeping,
  ) {}

  async record(entry: FailedLogin): Promise<void> {
    await this.writes((trx) =>
      trx
        .insertInto('failed_logins')
        .values({
          id: newId('flg'),
          occurred_at: nowIso(),
          username: entry.username.slice(0, 255),
          user_id: entry.userId,
          ip_address: entry.ipAddress,
          reason: entry.reason,
        })
        .execute(),
    );
  }

  async countSince(since: string, where: { username?: string; ipAddress?: string } = {}): Promise<number> {
    let q = this.db
      .selectFrom('failed_logins')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('occurred_at', '>=', since);
    if (where.username !== undefined) q = q.where('username', '=', where.username);
    if (where.ipAddress !== undefined) q = q.where('ip_address', '=', where.ipAddress);
    const row = await q.executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Distinct accounts tried from one address since `since` (a password-spraying signal). */
  async usernamesFrom(ipAddress: string, since: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('failed_logins')
      .select('username')
      .distinct()
      .where('ip_address', '=', ipAddress)
      .where('occurred_at', '>=', since)
      .limit(50)
      .execute();
    return rows.map((r) => r.username);
  }

  async prune(before: string): Promise<number> {
    const r = await this.writes((trx) =>
      trx.deleteFrom('failed_logins').where('occurred_at', '<', before).executeTakeFirst(),
    );
    return Number(r.numDeletedRows);
  }
}
