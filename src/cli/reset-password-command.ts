import { randomBytes } from 'node:crypto';
import { AuditLog } from '../audit/audit-log.js';
import { AccessTokens } from '../auth/access-tokens.js';
import { ApiKeyStore } from '../auth/api-key-store.js';
import { AuthService } from '../auth/auth-service.js';
import { createPasswordHasher } from '../auth/passwords.js';
import { SessionStore } from '../auth/session-store.js';
import { createSharedState } from '../cluster/create-shared-state.js';
import type { BootConfig } from '../config/load-config.js';
import { AppError } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import { PlatformEvents } from '../kernel/platform-events.js';
import { bookkeeping } from '../storage/bookkeeping.js';
import { createDatabase } from '../storage/create-database.js';
import { migrateToLatest } from '../storage/migrate.js';
import { UserStore } from '../users/user-store.js';

export interface ResetPasswordOutput {
  out: (text: string) => void;
  err: (text: string) => void;
}

/**
 * `platform admin reset-password <user> [--password X]`: the way back in for an operator who lost the admin
 * password. Every session of the user ends; in cluster mode running instances are told over Redis at once.
 * Without --password one is generated, printed once, and must be changed at the next login.
 */
export async function resetPasswordCommand(
  boot: BootConfig,
  login: string,
  password: string | undefined,
  io: ResetPasswordOutput,
): Promise<number> {
  const config = boot.config;
  const database = await createDatabase(config);
  const shared = await createSharedState(config);
  const hasher = createPasswordHasher(config.auth.argon2_memory_kib, config.auth.argon2_time_cost);
  const users = new UserStore(database.db, database.dialect);
  const auth = new AuthService({
    config: () => config,
    users,
    sessionStore: new SessionStore(database.db, bookkeeping(database)),
    apiKeys: new ApiKeyStore(database.db, bookkeeping(database)),
    // This service only revokes; it never signs or verifies a token, so any key will do.
    tokens: new AccessTokens(randomBytes(32).toString('hex')),
    hasher,
    shared,
    events: new PlatformEvents(),
  });
  try {
    await migrateToLatest(database.db as never);
    const user = await users.findByLogin(login);
    if (!user) {
      io.err(`no user '${login}'\n`);
      return 1;
    }
    const secret = password ?? randomBytes(12).toString('base64url');
    try {
      auth.assertPasswordAcceptable(secret, 'password');
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      io.err(`${err.message}\n`);
      return 2;
    }
    await users.update(user.id, {
      password_hash: await hasher.hash(secret),
      password_change_required: password === undefined ? 1 : 0,
      failed_login_attempts: 0,
      locked_until: null,
      last_password_change: nowIso(),
    });
    const revoked = await auth.revokeSessions({ userId: user.id }, 'password_reset');
    await auth.userChanged(user.id);
    await new AuditLog(database.db).write({
      adminUser: 'cli',
      action: 'user.reset_password',
      resourceType: 'user',
      resourceId: user.id,
      details: {
        username: user.username,
        via: 'cli',
        generated_password: password === undefined,
        sessions_revoked: revoked.length,
      },
    });
    io.out(
      password === undefined
        ? `new password for ${user.username}: ${secret}\n(it must be changed at the next login; ${revoked.length} session(s) ended)\n`
        : `password of ${user.username} changed; ${revoked.length} session(s) ended\n`,
    );
    return 0;
  } finally {
    await auth.close();
    await shared.close();
    await database.close();
  }
}
