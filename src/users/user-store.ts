import { type ExpressionBuilder, type Kysely, type Selectable, sql, type Updateable } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Dialect } from '../storage/database.js';
import { UNICODE_LOWER } from '../storage/sqlite/unicode-lower.js';
import type { Tables, UsersTable } from '../storage/tables.js';

export type UserRow = Selectable<UsersTable>;

/** How many names that belong to no account have their failed logins counted (see reserveUnknownLoginAttempt). */
const UNKNOWN_NAMES_KEPT = 10_000;

export interface NewUser {
  username: string;
  email: string;
  passwordHash: string;
  fullName?: string;
  roles: string[];
  passwordChangeRequired?: boolean;
}

export type UserSort = 'username' | 'email' | 'created_at' | 'last_login';

export interface UserQuery {
  page: number;
  perPage: number;
  search?: string | undefined;
  role?: string | undefined;
  status?: string | undefined;
  createdAfter?: string | undefined;
  sort: UserSort;
  order: 'asc' | 'desc';
}

/** `%` and `_` in user input match themselves, not any text. */
const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Storage of user accounts. */
export class UserStore {
  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: Dialect,
  ) {}

  async create(input: NewUser): Promise<UserRow> {
    const now = nowIso();
    const row: UserRow = {
      id: newId('usr'),
      username: input.username,
      email: input.email.toLowerCase(),
      password_hash: input.passwordHash,
      full_name: input.fullName ?? '',
      roles: JSON.stringify(input.roles),
      status: 'active',
      email_verified: 0,
      last_login: null,
      login_count: 0,
      failed_login_attempts: 0,
      locked_until: null,
      last_password_change: now,
      password_change_required: input.passwordChangeRequired ? 1 : 0,
      suspended_until: null,
      suspension_reason: null,
      profile: '{}',
      preferences: '{}',
      created_at: now,
      updated_at: now,
    };
    await this.db.insertInto('users').values(row).execute();
    return row;
  }

  findById(id: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Looks a login name up by username, or by e-mail (case-insensitive). */
  /** By username (whatever its case) or e-mail address; an exact username first where old data holds both cases. */
  findByLogin(login: string): Promise<UserRow | undefined> {
    return this.db
      .selectFrom('users')
      .selectAll()
      .where((eb) =>
        eb.or([eb(sql`lower(username)`, '=', login.toLowerCase()), eb('email', '=', login.toLowerCase())]),
      )
      .orderBy(sql`case when username = ${login} then 0 else 1 end`)
      .executeTakeFirst();
  }

  async findConflict(
    username: string,
    email: string,
    exceptId?: string,
  ): Promise<'username' | 'email' | undefined> {
    let q = this.db
      .selectFrom('users')
      .select(['username', 'email'])
      .where((eb) =>
        eb.or([eb(sql`lower(username)`, '=', username.toLowerCase()), eb('email', '=', email.toLowerCase())]),
      );
    if (exceptId) q = q.where('id', '!=', exceptId);
    const row = await q.executeTakeFirst();
    if (!row) return undefined;
    return row.username.toLowerCase() === username.toLowerCase() ? 'username' : 'email';
  }

  async update(id: string, changes: Updateable<UsersTable>): Promise<void> {
    await this.db
      .updateTable('users')
      .set({ ...changes, updated_at: nowIso() })
      .where('id', '=', id)
      .execute();
  }

  /**
   * Sets a new password only if the stored hash is still `expectedHash` (the one the current password was
   * checked against); false when another change came first.
   */
  async replacePassword(
    id: string,
    expectedHash: string,
    changes: Pick<
      Updateable<UsersTable>,
      'password_hash' | 'last_password_change' | 'password_change_required'
    >,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('users')
      .set({ ...changes, updated_at: nowIso() })
      .where('id', '=', id)
      .where('password_hash', '=', expectedHash)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** One page of users matching the filters, with the total number of matches. */
  async list(q: UserQuery): Promise<{ rows: UserRow[]; total: number }> {
    let base = this.db.selectFrom('users');
    if (q.search) {
      const like = `%${escapeLike(q.search.toLowerCase())}%`;
      // SQLite's lower() folds ASCII only (PostgreSQL's every alphabet): there, JavaScript's (UNICODE_LOWER).
      const lower = this.dialect === 'sqlite' ? UNICODE_LOWER : 'lower';
      base = base.where((eb) =>
        eb.or([
          eb(eb.fn(lower, ['username']), 'like', sql<string>`${like} escape '\\'`),
          eb(eb.fn(lower, ['email']), 'like', sql<string>`${like} escape '\\'`),
          eb(eb.fn(lower, ['full_name']), 'like', sql<string>`${like} escape '\\'`),
        ]),
      );
    }
    // Roles are a JSON array in text: matching the quoted name finds exactly that role.
    if (q.role) base = base.where('roles', 'like', `%${JSON.stringify(q.role)}%`);
    if (q.status) base = base.where('status', '=', q.status);
    if (q.createdAfter) base = base.where('created_at', '>=', q.createdAfter);
    const totalRow = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    // Users who never logged in sort last in either direction, as "no value" should.
    let rows = base.selectAll();
    if (q.sort === 'last_login') {
      rows = rows.orderBy(sql`case when last_login is null then 1 else 0 end`).orderBy('last_login', q.order);
    } else {
      rows = rows.orderBy(q.sort, q.order);
    }
    const page = await rows
      .orderBy('id', q.order)
      .limit(q.perPage)
      .offset((q.page - 1) * q.perPage)
      .execute();
    return { rows: page, total: Number(totalRow?.n ?? 0) };
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Ends every suspension whose time is up; returns the ids of the users it reactivated. */
  async liftExpiredSuspensions(): Promise<string[]> {
    const now = nowIso();
    const due = await this.db
      .selectFrom('users')
      .select('id')
      .where('status', '=', 'suspended')
      .where('suspended_until', 'is not', null)
      .where('suspended_until', '<=', now)
      .execute();
    if (due.length === 0) return [];
    const ids = due.map((r) => r.id);
    await this.db
      .updateTable('users')
      .set({ status: 'active', suspended_until: null, suspension_reason: null, updated_at: now })
      .where('id', 'in', ids)
      .where('status', '=', 'suspended')
      .execute();
    return ids;
  }

  /**
   * Changes (or deletes) a user unless that would leave no other active administrator; answers false, having
   * changed nothing, when it would. The count and the change are one transaction, and on PostgreSQL every
   * active administrator's row is locked first, in id order: two such changes at once (two administrators
   * removing each other) are counted one after the other, on any instance. SQLite's one connection runs the
   * transaction whole.
   */
  async changeKeepingAnAdmin(id: string, change: Updateable<UsersTable> | 'delete'): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const admins = trx
        .selectFrom('users')
        .select('id')
        .where('status', '=', 'active')
        .where('roles', 'like', '%"admin"%')
        .orderBy('id');
      const rows = await (this.dialect === 'postgres' ? admins.forUpdate() : admins).execute();
      if (!rows.some((r) => r.id !== id)) return false;
      if (change === 'delete') await trx.deleteFrom('users').where('id', '=', id).execute();
      else {
        await trx
          .updateTable('users')
          .set({ ...change, updated_at: nowIso() })
          .where('id', '=', id)
          .execute();
      }
      return true;
    });
  }

  /**
   * Counts a login attempt before its password is checked, atomically, so that attempts sent at once cannot
   * all pass a lockout check made before any of them failed: at most `max` are admitted per lockout window, on
   * any instance. A lockout that has run out starts a fresh count. Resolves to the attempt's number, or to
   * undefined when the account is locked (or `max` attempts are already counted: then it is locked until
   * `lockUntil` unless one of them succeeds, so no count is left stuck). A successful login resets the count;
   * a failed one keeps it and locks the account at `max` (`lockAfterFailure`).
   */
  async reserveLoginAttempt(id: string, max: number, lockUntil: string): Promise<number | undefined> {
    const now = nowIso();
    const row = await this.db
      .updateTable('users')
      .set((eb) => ({
        failed_login_attempts: eb
          .case()
          .when(lockRanOut(eb, now))
          .then(1)
          .else(eb('failed_login_attempts', '+', 1))
          .end(),
        locked_until: eb.case().when(lockRanOut(eb, now)).then(null).else(eb.ref('locked_until')).end(),
      }))
      .where('id', '=', id)
      .where((eb) =>
        eb.or([
          lockRanOut(eb, now),
          eb.and([eb('locked_until', 'is', null), eb('failed_login_attempts', '<', max)]),
        ]),
      )
      .returning('failed_login_attempts')
      .executeTakeFirst();
    if (row) return Number(row.failed_login_attempts);
    await this.db
      .updateTable('users')
      .set({ locked_until: lockUntil })
      .where('id', '=', id)
      .where('locked_until', 'is', null)
      .execute();
    return undefined;
  }

  /** After a failed attempt counted by reserveLoginAttempt: locks the account once the count reaches `max`. */
  async lockAfterFailure(id: string, attempts: number, max: number, lockUntil: string): Promise<boolean> {
    if (attempts < max) return false;
    await this.db.updateTable('users').set({ locked_until: lockUntil }).where('id', '=', id).execute();
    return true;
  }

  /**
   * reserveLoginAttempt for a name that belongs to no account, counted by the name (lower case) in the same
   * way, so that such a name locks after `max` failures as an account does. At most UNKNOWN_NAMES_KEPT names are
   * kept: adding one forgets the least recently tried beyond that.
   */
  async reserveUnknownLoginAttempt(
    login: string,
    max: number,
    lockUntil: string,
  ): Promise<number | undefined> {
    const name = login.toLowerCase().slice(0, 320);
    const now = nowIso();
    // One statement, as for an account (a first try of a name writes no more than a try of an account does):
    // a new name starts at 1; a known one counts on unless it is locked or at `max`.
    const row = await this.db
      .insertInto('login_lockouts')
      .values({ name, failed_login_attempts: 1, locked_until: null, updated_at: now })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet((eb) => {
            const ranOut = eb.and([
              eb('login_lockouts.locked_until', 'is not', null),
              eb('login_lockouts.locked_until', '<=', now),
            ]);
            return {
              failed_login_attempts: eb
                .case()
                .when(ranOut)
                .then(1)
                .else(eb('login_lockouts.failed_login_attempts', '+', 1))
                .end(),
              locked_until: eb
                .case()
                .when(ranOut)
                .then(null)
                .else(eb.ref('login_lockouts.locked_until'))
                .end(),
              updated_at: now,
            };
          })
          .where((eb) =>
            eb.or([
              eb.and([
                eb('login_lockouts.locked_until', 'is not', null),
                eb('login_lockouts.locked_until', '<=', now),
              ]),
              eb.and([
                eb('login_lockouts.locked_until', 'is', null),
                eb('login_lockouts.failed_login_attempts', '<', max),
              ]),
            ]),
          ),
      )
      .returning('failed_login_attempts')
      .executeTakeFirst();
    // A first count (a new name, or one whose lockout ran out) may have added a row: keep the table bounded.
    if (row && Number(row.failed_login_attempts) === 1) await this.forgetOldUnknownNames();
    if (row) return Number(row.failed_login_attempts);
    await this.db
      .updateTable('login_lockouts')
      .set({ locked_until: lockUntil, updated_at: now })
      .where('name', '=', name)
      .where('locked_until', 'is', null)
      .execute();
    return undefined;
  }

  /** lockAfterFailure for a name that belongs to no account. */
  async lockUnknownAfterFailure(
    login: string,
    attempts: number,
    max: number,
    lockUntil: string,
  ): Promise<boolean> {
    if (attempts < max) return false;
    await this.db
      .updateTable('login_lockouts')
      .set({ locked_until: lockUntil })
      .where('name', '=', login.toLowerCase().slice(0, 320))
      .execute();
    return true;
  }

  private async forgetOldUnknownNames(): Promise<void> {
    const edge = await this.db
      .selectFrom('login_lockouts')
      .select('updated_at')
      .orderBy('updated_at', 'desc')
      .offset(UNKNOWN_NAMES_KEPT)
      .limit(1)
      .executeTakeFirst();
    if (edge) await this.db.deleteFrom('login_lockouts').where('updated_at', '<=', edge.updated_at).execute();
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }
}

export const rolesOf = (row: Pick<UserRow, 'roles'>): string[] => JSON.parse(row.roles) as string[];

/** A lockout that has run out: the account is open again and its count of attempts starts afresh. */
const lockRanOut = (eb: ExpressionBuilder<Tables, 'users'>, now: string) =>
  eb.and([eb('locked_until', 'is not', null), eb('locked_until', '<=', now)]);
