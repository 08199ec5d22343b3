import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Kysely, Updateable } from 'kysely';
import type { AuditLog } from '../audit/audit-log.js';
import type { AuthService } from '../auth/auth-service.js';
import type { PasswordHasher } from '../auth/passwords.js';
import { hasPermission } from '../auth/principal.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError, notFound } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import { type PlatformEvents, requestOrigin } from '../kernel/platform-events.js';
import { passwordResetMail, suspensionMail, welcomeMail } from '../mail/account-mails.js';
import type { MailOutcome } from '../mail/mail-message.js';
import type { Mailer } from '../mail/mailer.js';
import type { Tables, UsersTable } from '../storage/tables.js';
import { apiKeysOf, recentSessionsOf } from './user-credentials.js';
import { rolesOf, type UserQuery, type UserRow, type UserStore } from './user-store.js';
import { preferencesOf, profileOf, userApiKeyView, userSessionView, userSummary } from './user-views.js';

export interface CreateUserInput {
  username: string;
  email: string;
  password: string;
  full_name?: string | undefined;
  roles?: string[] | undefined;
  send_welcome_email?: boolean | undefined;
  force_password_change?: boolean | undefined;
}

export interface UpdateUserInput {
  email?: string | undefined;
  full_name?: string | undefined;
  roles?: string[] | undefined;
  status?: 'active' | 'inactive' | undefined;
  email_verified?: boolean | undefined;
  profile?: Record<string, unknown> | undefined;
  preferences?: Record<string, unknown> | undefined;
}

export interface SuspendInput {
  reason?: string | undefined;
  duration_days?: number | undefined;
  notify_user?: boolean | undefined;
}

export interface ResetPasswordInput {
  temporary_password?: string | undefined;
  force_change_on_login?: boolean | undefined;
  send_email?: boolean | undefined;
}

const conflict = (field: string, value: string) =>
  new AppError(
    'RESOURCE_CONFLICT',
    `A user with this ${field === 'email' ? 'e-mail' : field} already exists`,
    {
      details: { field, reason: 'already taken', value },
    },
  );

/** A unique index refused the row: two requests raced for the same username or e-mail. */
function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**
 * User administration: every change is validated here, audited, announced as a platform event, and made
 * effective at once for the user's live credentials (the auth caches on every instance are told).
 */
export class UserService {
  constructor(
    private readonly deps: {
      db: Kysely<Tables>;
      users: UserStore;
      auth: AuthService;
      hasher: PasswordHasher;
      mailer: Mailer;
      audit: AuditLog;
      events: PlatformEvents;
      config: () => PlatformConfig;
    },
  ) {}

  /** Suspensions whose time is up are lifted before anything reads users, so every view shows the real state. */
  async liftExpiredSuspensions(): Promise<void> {
    const lifted = await this.deps.users.liftExpiredSuspensions();
    for (const id of lifted) await this.deps.auth.userChanged(id);
  }

  async list(query: UserQuery): Promise<{ rows: UserRow[]; total: number }> {
    await this.liftExpiredSuspensions();
    return this.deps.users.list(query);
  }

  async get(id: string): Promise<UserRow> {
    await this.liftExpiredSuspensions();
    const row = await this.deps.users.findById(id);
    if (!row) throw notFound('user', id);
    return row;
  }

  /** The full detail: fields, permissions, profile, preferences, metadata, sessions and API keys (masked). */
  async detail(id: string) {
    const row = await this.get(id);
    return this.detailOf(row);
  }

  async detailOf(row: UserRow) {
    const [sessions, keys] = await Promise.all([
      recentSessionsOf(this.deps.db, row.id),
      apiKeysOf(this.deps.db, row.id),
    ]);
    return {
      ...userSummary(row),
      sessions: sessions.map(userSessionView),
      api_keys: keys.map(userApiKeyView),
    };
  }

  async create(
    input: CreateUserInput,
    request: FastifyRequest,
  ): Promise<{ row: UserRow; emailDelivery: MailOutcome | 'not_requested' }> {
    const roles = input.roles && input.roles.length > 0 ? [...new Set(input.roles)] : ['user'];
    this.assertMayGrant(request, roles);
    this.deps.auth.assertPasswordAcceptable(input.password, 'password');
    const taken = await this.deps.users.findConflict(input.username, input.email);
    if (taken) throw conflict(taken, taken === 'email' ? input.email : input.username);
    let row: UserRow;
    try {
      row = await this.deps.users.create({
        username: input.username,
        email: input.email,
        passwordHash: await this.deps.hasher.hash(input.password),
        fullName: input.full_name ?? '',
        roles,
        passwordChangeRequired: input.force_password_change ?? false,
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const again = await this.deps.users.findConflict(input.username, input.email);
      throw conflict(again ?? 'username', again === 'email' ? input.email : input.username);
    }
    const emailDelivery = input.send_welcome_email
      ? await this.deps.mailer.send(welcomeMail(row, row.password_change_required === 1))
      : 'not_requested';
    await this.deps.audit.record(request, {
      action: 'user.create',
      resourceType: 'user',
      resourceId: row.id,
      details: {
        username: row.username,
        email: row.email,
        roles,
        force_password_change: row.password_change_required === 1,
        welcome_email: emailDelivery,
      },
    });
    this.announce(request, 'user.created', {
      user_id: row.id,
      username: row.username,
      email: row.email,
      roles,
      status: row.status,
    });
    return { row, emailDelivery };
  }

  /**
   * Applies the given fields; omitted ones keep their values (PUT and PATCH alike). `self` marks the
   * resource API's self-service path, where roles, status and e-mail verification are not the user's to change.
   */
  async update(id: string, input: UpdateUserInput, request: FastifyRequest, self = false): Promise<UserRow> {
    const row = await this.get(id);
    if (self) this.deps.auth.assertMayChangeAccount(request.principal!, 'Changing your own account');
    // An administrator's account (every field) is administrator work: a key narrowed to write:users manages
    // ordinary users only, or it could point an administrator's e-mail at its own mailbox.
    else if (rolesOf(row).includes('admin')) {
      this.assertMayManageAdmin(
        request,
        "Changing an administrator's account",
        Object.keys(input).find((k) => input[k as keyof UpdateUserInput] !== undefined) ?? 'user_id',
      );
    }
    if (self) {
      const forbidden = (['roles', 'status', 'email_verified'] as const).filter(
        (f) => input[f] !== undefined,
      );
      if (forbidden.length > 0) {
        throw new AppError('AUTHORIZATION_DENIED', `Users cannot change their own ${forbidden.join(', ')}`, {
          details: {
            field: forbidden[0],
            reason: 'not changeable by the user themselves',
            fields: forbidden,
          },
        });
      }
    }
    const changes: Updateable<UsersTable> = {};
    const changed: Record<string, unknown> = {};
    if (input.email !== undefined && input.email.toLowerCase() !== row.email) {
      const email = input.email.toLowerCase();
      if ((await this.deps.users.findConflict(row.username, email, row.id)) === 'email')
        throw conflict('email', email);
      changes.email = email;
      // A new address is not verified, unless the caller says so in the same request.
      changes.email_verified = 0;
      changed['email'] = email;
    }
    if (input.email_verified !== undefined) {
      changes.email_verified = input.email_verified ? 1 : 0;
      changed['email_verified'] = input.email_verified;
    }
    if (input.full_name !== undefined && input.full_name !== row.full_name) {
      changes.full_name = input.full_name;
      changed['full_name'] = input.full_name;
    }
    const oldRoles = rolesOf(row);
    let roles = oldRoles;
    if (input.roles !== undefined) {
      const next = [...new Set(input.roles)];
      if (next.length === 0) {
        throw new AppError('VALIDATION_ERROR', 'A user needs at least one role', {
          details: { field: 'roles', reason: 'empty' },
        });
      }
      if (next.join() !== oldRoles.join()) {
        this.assertMayGrant(
          request,
          next.filter((r) => !oldRoles.includes(r)),
        );
        roles = next;
        changes.roles = JSON.stringify(next);
        changed['roles'] = next;
      }
    }
    let status = row.status;
    if (input.status !== undefined && input.status !== row.status) {
      if (input.status === 'inactive' && id === request.principal?.userId) {
        throw new AppError('RESOURCE_CONFLICT', 'You cannot deactivate your own account', {
          details: { field: 'status', reason: 'self' },
        });
      }
      status = input.status;
      changes.status = input.status;
      changes.suspended_until = null;
      changes.suspension_reason = null;
      changed['status'] = input.status;
    }
    if (input.profile !== undefined) {
      changes.profile = JSON.stringify({ ...profileOf(row), ...input.profile });
      changed['profile'] = input.profile;
    }
    if (input.preferences !== undefined) {
      changes.preferences = JSON.stringify({ ...preferencesOf(row), ...input.preferences });
      changed['preferences'] = input.preferences;
    }
    if (Object.keys(changes).length > 0) {
      try {
        await this.applyKeepingAnAdmin(row, roles, status, changes);
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('email', String(changes.email));
        throw err;
      }
      if (status !== 'active' && row.status === 'active')
        await this.deps.auth.revokeSessions({ userId: id }, status);
      await this.deps.auth.userChanged(id);
    }
    const updated = (await this.deps.users.findById(id)) ?? row;
    await this.deps.audit.record(request, {
      action: 'user.update',
      resourceType: 'user',
      resourceId: id,
      details: { username: row.username, changes: changed, self_service: self },
    });
    if (Object.keys(changed).length > 0) {
      this.announce(request, 'user.updated', {
        user_id: id,
        username: updated.username,
        changed_fields: Object.keys(changed),
        roles,
        previous_roles: oldRoles,
        status: updated.status,
      });
    }
    return updated;
  }

  async suspend(
    id: string,
    input: SuspendInput,
    request: FastifyRequest,
  ): Promise<{ row: UserRow; emailDelivery: MailOutcome | 'not_requested' }> {
    const row = await this.get(id);
    if (id === request.principal?.userId) {
      throw new AppError('RESOURCE_CONFLICT', 'You cannot suspend your own account', {
        details: { field: 'user_id', reason: 'self' },
      });
    }
    const days = input.duration_days ?? 0;
    const until = days > 0 ? new Date(Date.now() + days * 86_400_000).toISOString() : null;
    const reason = input.reason ?? '';
    await this.applyKeepingAnAdmin(row, rolesOf(row), 'suspended', {
      status: 'suspended',
      suspended_until: until,
      suspension_reason: reason,
    });
    // The user's sessions end and their API keys stop with the next request, on every instance.
    const revoked = await this.deps.auth.revokeSessions({ userId: id }, 'suspended');
    await this.deps.auth.userChanged(id);
    const emailDelivery = input.notify_user
      ? await this.deps.mailer.send(suspensionMail(row, reason, until))
      : 'not_requested';
    await this.deps.audit.record(request, {
      action: 'user.suspend',
      resourceType: 'user',
      resourceId: id,
      details: {
        username: row.username,
        reason,
        duration_days: days,
        suspended_until: until,
        notify_user: input.notify_user ?? false,
        notification: emailDelivery,
        sessions_revoked: revoked.length,
      },
    });
    this.announce(request, 'user.suspended', {
      user_id: id,
      username: row.username,
      reason,
      duration_days: days,
      suspended_until: until,
    });
    return { row: (await this.deps.users.findById(id)) ?? row, emailDelivery };
  }

  async resetPassword(
    id: string,
    input: ResetPasswordInput,
    request: FastifyRequest,
  ): Promise<{ row: UserRow; emailDelivery: MailOutcome | 'not_requested'; generated?: string }> {
    const row = await this.get(id);
    const generated = input.temporary_password === undefined ? this.generatePassword() : undefined;
    const password = input.temporary_password ?? (generated as string);
    this.deps.auth.assertPasswordAcceptable(password, 'temporary_password');
    const mustChange = input.force_change_on_login ?? true;
    await this.deps.users.update(id, {
      password_hash: await this.deps.hasher.hash(password),
      last_password_change: nowIso(),
      password_change_required: mustChange ? 1 : 0,
      failed_login_attempts: 0,
      locked_until: null,
    });
    const revoked = await this.deps.auth.revokeSessions({ userId: id }, 'password_reset');
    await this.deps.auth.userChanged(id);
    const emailDelivery = input.send_email
      ? await this.deps.mailer.send(passwordResetMail(row, password, mustChange))
      : 'not_requested';
    await this.deps.audit.record(request, {
      action: 'user.reset_password',
      resourceType: 'user',
      resourceId: id,
      details: {
        username: row.username,
        force_change_on_login: mustChange,
        generated_password: generated !== undefined,
        email: emailDelivery,
        sessions_revoked: revoked.length,
      },
    });
    this.announce(request, 'user.updated', {
      user_id: id,
      username: row.username,
      changed_fields: ['password'],
      roles: rolesOf(row),
      previous_roles: rolesOf(row),
      status: row.status,
    });
    const updated = (await this.deps.users.findById(id)) ?? row;
    return { row: updated, emailDelivery, ...(generated ? { generated } : {}) };
  }

  async delete(id: string, request: FastifyRequest): Promise<void> {
    const row = await this.get(id);
    if (id === request.principal?.userId) {
      throw new AppError('RESOURCE_CONFLICT', 'You cannot delete your own account', {
        details: { field: 'user_id', reason: 'self' },
      });
    }
    if (rolesOf(row).includes('admin'))
      this.assertMayManageAdmin(request, 'Deleting an administrator', 'user_id');
    // Sessions and API keys go with the row (foreign keys cascade); the caches everywhere are told at once.
    await this.applyKeepingAnAdmin(row, [], 'deleted', 'delete');
    await this.deps.auth.userChanged(id);
    await this.deps.audit.record(request, {
      action: 'user.delete',
      resourceType: 'user',
      resourceId: id,
      details: { username: row.username, email: row.email, roles: rolesOf(row) },
    });
    this.announce(request, 'user.deleted', { user_id: id, username: row.username });
  }

  /** Only administrators may hand out the admin role (an API key with write:users alone may not). */
  /**
   * Granting the admin role takes an administrator acting with user administration (`admin:users`): an admin's
   * API key narrowed to `write:users` creates and edits users, but cannot make one an administrator.
   */
  private assertMayGrant(request: FastifyRequest, roles: readonly string[]): void {
    if (!roles.includes('admin')) return;
    this.assertMayManageAdmin(request, 'Granting the admin role', 'roles');
  }

  /**
   * Demoting, deactivating or deleting an administrator takes the same as making one: an administrator acting
   * with `admin:users` (a key narrowed to `write:users` manages users, not administrators).
   */
  private assertMayManageAdmin(request: FastifyRequest, what: string, field: string): void {
    const principal = request.principal;
    if (!principal?.isAdmin) {
      throw new AppError('ADMIN_REQUIRED', `${what} requires an administrator`, {
        details: { field, reason: 'requires an administrator' },
      });
    }
    if (!hasPermission(principal, 'admin:users')) {
      throw new AppError('INSUFFICIENT_ADMIN_PERMISSIONS', `${what} requires scope 'admin:users'`, {
        details: { field, required_permission: 'admin:users' },
      });
    }
  }

  /**
   * Applies a change to a user (or deletes it). The platform always keeps one active administrator: a change
   * that would demote, deactivate, suspend or remove the last one is refused, and the check and the change are
   * made together (two administrators removing each other at once leave one).
   */
  private async applyKeepingAnAdmin(
    row: UserRow,
    rolesAfter: readonly string[],
    statusAfter: string,
    change: Updateable<UsersTable> | 'delete',
  ): Promise<void> {
    const wasActiveAdmin = row.status === 'active' && rolesOf(row).includes('admin');
    const staysActiveAdmin = statusAfter === 'active' && rolesAfter.includes('admin');
    if (!wasActiveAdmin || staysActiveAdmin) {
      if (change === 'delete') await this.deps.users.delete(row.id);
      else await this.deps.users.update(row.id, change);
      return;
    }
    if (!(await this.deps.users.changeKeepingAnAdmin(row.id, change))) {
      throw new AppError('RESOURCE_CONFLICT', 'This is the last active administrator', {
        details: { field: 'user_id', reason: 'last_active_admin' },
      });
    }
  }

  private generatePassword(): string {
    const length = Math.max(16, this.deps.config().auth.password_min_length);
    return randomBytes(length).toString('base64url').slice(0, length);
  }

  private announce(request: FastifyRequest, type: string, data: Record<string, unknown>): void {
    const p = request.principal;
    this.deps.events.announce(type, 'system', data, {
      actor: p && { id: p.userId, username: p.username },
      origin: requestOrigin(request),
    });
  }
}
