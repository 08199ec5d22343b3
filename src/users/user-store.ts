import type { Kysely, Selectable, Updateable } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Tables, UsersTable } from '../storage/tables.js';

export type UserRow = Selectable<UsersTable>;

export interface NewUser {
  username: string;
  email: string;
  passwordHash: string;
  fullName?: string;
  roles: string[];
  passwordChangeRequired?: boolean;
}

/** Storage of user accounts. */
export class UserStore {
  constructor(private readonly db: Kysely<Tables>) {}

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
  findByLogin(login: string): Promise<UserRow | undefined> {
    return this.db
      .selectFrom('users')
      .selectAll()
      .where((eb) => eb.or([eb('username', '=', login), eb('email', '=', login.toLowerCase())]))
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
      .where((eb) => eb.or([eb('username', '=', username), eb('email', '=', email.toLowerCase())]));
    if (exceptId) q = q.where('id', '!=', exceptId);
    const row = await q.executeTakeFirst();
    if (!row) return undefined;
    return row.username === username ? 'username' : 'email';
  }

  async update(id: string, changes: Updateable<UsersTable>): Promise<void> {
    await this.db
      .updateTable('users')
      .set({ ...changes, updated_at: nowIso() })
      .where('id', '=', id)
      .execute();
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
