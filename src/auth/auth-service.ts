import type { CacheService } from '../cache/cache-service.js';
import { LocalCache } from '../cache/local-cache.js';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import type { EventOrigin, PlatformEvents } from '../kernel/platform-events.js';
import { rolesOf, type UserRow, type UserStore } from '../users/user-store.js';
import type { AccessTokens } from './access-tokens.js';
import { type ApiKeyRow, type ApiKeyStore, scopesOf } from './api-key-store.js';
import type { PasswordHasher } from './passwords.js';
import type { Principal } from './principal.js';
import { expandPermissions, permissionsOf } from './roles.js';
import type { SessionRow, SessionStore } from './session-store.js';
import { randomToken, sha256Hex } from './token-hash.js';

const INVALIDATE_CHANNEL = 'auth.invalidate';
const ACTIVITY_RESOLUTION_MS = 60_000;
/** What changed: cached copies of these sessions, this user (and its sessions and keys), this key are dropped. */
export type Invalidation = { sessionIds?: string[]; userId?: string; apiKeyId?: string };

export interface LoginResult {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  refresh_expires_in: number;
  user: { id: string; username: string; roles: string[]; permissions: string[] };
  password_change_required: boolean;
}

export interface ClientInfo {
  ip: string;
  userAgent: string;
  /** The request logging in: carried by the auth.login / auth.login_failed events. */
  origin?: EventOrigin | undefined;
}

const authFailed = (reason: string, message = 'Invalid credentials') =>
  new AppError('AUTHENTICATION_FAILED', message, {
    details: { reason },
    headers: { 'www-authenticate': 'Bearer' },
  });

const accountLocked = () =>
  authFailed('account_locked', 'The account is locked after repeated failed logins; try again later');

/**
 * Logins, token rotation, sessions, API keys, and the per-request resolution of credentials to a Principal.
 * Lookups are cached briefly; every revocation is announced so all instances drop their copies at once.
 */
export class AuthService {
  // Cached in the cache service's `user_sessions` namespace (L1 only), so they count in its statistics
  // and an operator's clear of user_sessions drops them on every instance.
  private readonly sessions: LocalCache<SessionRow>;
  private readonly users: LocalCache<UserRow>;
  private readonly keys: LocalCache<ApiKeyRow>;
  // Uses of each API key not yet written, with the time of the latest (the key's `last_used`).
  private readonly keyUse = new Map<string, { uses: number; at: string }>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly invalidationListeners = new Set<(m: Invalidation) => void>();
  private readonly unsubscribe: () => void;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      config: () => PlatformConfig;
      users: UserStore;
      sessionStore: SessionStore;
      apiKeys: ApiKeyStore;
      tokens: AccessTokens;
      hasher: PasswordHasher;
      shared: SharedState;
      events: PlatformEvents;
      /** Absent in CLI tools, which then cache in a private L1. */
      cache?: CacheService;
    },
  ) {
    const local = <V>(kind: string) =>
      deps.cache
        ? deps.cache.local<V>('user_sessions', kind, 30_000)
        : LocalCache.standalone<V>(kind, 30_000);
    this.sessions = local<SessionRow>('session');
    this.users = local<UserRow>('user');
    this.keys = local<ApiKeyRow>('api_key');
    this.unsubscribe = deps.shared.subscribe(INVALIDATE_CHANNEL, (m) => this.dropCached(m as Invalidation));
    this.flushTimer = setInterval(() => void this.flushKeyUse(), 5000);
    this.flushTimer.unref();
  }

  async close(): Promise<void> {
    this.unsubscribe();
    if (this.flushTimer) clearInterval(this.flushTimer);
    this.flushTimer = undefined;
    await this.flushKeyUse();
  }

  async login(loginName: string, password: string, client: ClientInfo): Promise<LoginResult> {
    const cfg = this.deps.config().auth;
    const lockUntil = new Date(Date.now() + cfg.lockout_minutes * 60_000).toISOString();
    const user = await this.deps.users.findByLogin(loginName);
    const failed = (data: Record<string, unknown>) =>
      this.deps.events.announce(
        'auth.login_failed',
        'auth',
        { username: user?.username ?? loginName, ip_address: client.ip, ...data },
        { origin: client.origin },
      );
    if (!user) {
      // A name that belongs to no account is counted and locked like one, and checked with the same work, so
      // neither the answers nor their timing reveal which names exist.
      const attempt = await this.deps.users.reserveUnknownLoginAttempt(
        loginName,
        cfg.max_failed_logins,
        lockUntil,
      );
      if (attempt === undefined) {
        failed({ reason: 'account_locked', locked: true });
        throw accountLocked();
      }
      await this.deps.hasher.verifyDecoy(password);
      const lock = await this.deps.users.lockUnknownAfterFailure(
        loginName,
        attempt,
        cfg.max_failed_logins,
        lockUntil,
      );
      failed({ reason: 'unknown_user', failed_login_attempts: attempt, locked: lock });
      throw authFailed('invalid_credentials');
    }
    // The attempt is counted before the password is checked: of many sent at once, at most max_failed_logins
    // are checked before the account locks.
    const attempt = await this.deps.users.reserveLoginAttempt(user.id, cfg.max_failed_logins, lockUntil);
    if (attempt === undefined) {
      this.users.delete(user.id);
      failed({ user_id: user.id, reason: 'account_locked', locked: true });
      throw accountLocked();
    }
    const valid = await this.deps.hasher.verify(user.password_hash, password);
    if (!valid) {
      const lock = await this.deps.users.lockAfterFailure(user.id, attempt, cfg.max_failed_logins, lockUntil);
      this.users.delete(user.id);
      failed({
        user_id: user.id,
        reason: 'invalid_credentials',
        failed_login_attempts: attempt,
        locked: lock,
      });
      throw authFailed('invalid_credentials');
    }
    const current = await this.refreshSuspension(user);
    if (current.status !== 'active') {
      // The right password: the attempt it counted is not a failure.
      await this.deps.users.update(user.id, { failed_login_attempts: 0, locked_until: null });
      this.users.delete(user.id);
    }
    this.assertActive(current);
    const refreshToken = randomToken();
    const session = await this.deps.sessionStore.create(
      user.id,
      client.userAgent,
      client.ip,
      cfg.refresh_token_ttl_seconds,
      refreshToken,
    );
    await this.deps.users.update(user.id, {
      last_login: nowIso(),
      login_count: user.login_count + 1,
      failed_login_attempts: 0,
      locked_until: null,
    });
    this.users.delete(user.id);
    this.deps.events.announce(
      'auth.login',
      'auth',
      { user_id: user.id, username: user.username, session_id: session.id, ip_address: client.ip },
      { actor: { id: user.id, username: user.username }, origin: client.origin },
    );
    return this.issue(user, session.id, refreshToken);
  }

  async refresh(refreshToken: string): Promise<LoginResult> {
    const next = randomToken();
    const result = await this.deps.sessionStore.rotate(refreshToken, next);
    if (result.outcome === 'unknown') throw authFailed('invalid_refresh_token');
    if (result.outcome === 'reused') {
      await this.revokeSessions({ sessionId: result.sessionId }, 'refresh_token_reuse');
      throw authFailed(
        'refresh_token_reused',
        'The refresh token was already used; the session has been revoked',
      );
    }
    const { session } = result;
    if (session.revoked_at !== null || session.expires_at <= nowIso()) throw authFailed('session_revoked');
    const user = await this.deps.users.findById(session.user_id);
    if (!user) throw authFailed('invalid_refresh_token');
    this.assertActive(await this.refreshSuspension(user));
    return this.issue(user, session.id, next);
  }

  async logout(principal: Principal, origin?: EventOrigin): Promise<void> {
    if (principal.sessionId) await this.revokeSessions({ sessionId: principal.sessionId }, 'logout');
    this.deps.events.announce(
      'auth.logout',
      'auth',
      { user_id: principal.userId, username: principal.username, session_id: principal.sessionId ?? null },
      { actor: { id: principal.userId, username: principal.username }, origin },
    );
  }

  /** Revokes sessions at once on every instance: their access tokens stop working with the next request. */
  async revokeSessions(
    where: { sessionId?: string; userId?: string; exceptSessionId?: string | undefined },
    reason: string,
  ): Promise<string[]> {
    const ids = await this.deps.sessionStore.revoke(where, reason);
    const message: Invalidation = { sessionIds: ids, ...(where.userId ? { userId: where.userId } : {}) };
    this.dropCached(message);
    await this.deps.shared.publish(INVALIDATE_CHANNEL, message);
    return ids;
  }

  /** Announces that a user changed (roles, status, password) so cached copies are dropped everywhere. */
  async userChanged(userId: string): Promise<void> {
    this.dropCached({ userId });
    await this.deps.shared.publish(INVALIDATE_CHANNEL, { userId } satisfies Invalidation);
  }

  async apiKeyRevoked(apiKeyId: string): Promise<void> {
    this.dropCached({ apiKeyId });
    await this.deps.shared.publish(INVALIDATE_CHANNEL, { apiKeyId } satisfies Invalidation);
  }

  async changePassword(principal: Principal, current: string, next: string): Promise<void> {
    this.assertMayChangeAccount(principal, 'Changing the password');
    const incorrect = () =>
      new AppError('AUTHENTICATION_FAILED', 'The current password is not correct', {
        details: { field: 'current_password', reason: 'incorrect' },
        headers: { 'www-authenticate': 'Bearer' },
      });
    const user = await this.deps.users.findById(principal.userId);
    if (!user || !(await this.deps.hasher.verify(user.password_hash, current))) throw incorrect();
    this.assertPasswordAcceptable(next);
    if (current === next) {
      throw new AppError('VALIDATION_ERROR', 'The new password must differ from the current one', {
        details: { field: 'new_password', reason: 'unchanged' },
      });
    }
    // Only over the password just checked: of two changes made at once, the second finds it gone.
    const replaced = await this.deps.users.replacePassword(user.id, user.password_hash, {
      password_hash: await this.deps.hasher.hash(next),
      last_password_change: nowIso(),
      password_change_required: 0,
    });
    if (!replaced) throw incorrect();
    await this.userChanged(user.id);
    // Whoever knew the old password may hold other sessions: they end; the caller's own session stays.
    await this.revokeSessions({ userId: user.id, exceptSessionId: principal.sessionId }, 'password_changed');
  }

  /**
   * Changes to the caller's own account (e-mail and profile, password, revoking sessions and API keys) take a
   * session (an access token) or an API key holding all its owner holds: a key narrowed to some scopes
   * (`read:system` for a monitoring script) cannot take over or lock out the account it belongs to.
   */
  assertMayChangeAccount(principal: Principal, what: string): void {
    if (holdsAllOfOwner(principal)) return;
    throw new AppError(
      'AUTHORIZATION_DENIED',
      `${what} needs an access token from a login, or an API key holding all its owner's permissions`,
      { details: { reason: 'narrowed_api_key', scopes: [...principal.permissions] } },
    );
  }

  assertPasswordAcceptable(password: string, field = 'new_password'): void {
    const min = this.deps.config().auth.password_min_length;
    if (password.length < min) {
      throw new AppError('VALIDATION_ERROR', `Passwords need at least ${min} characters`, {
        details: { field, reason: `shorter than ${min} characters` },
      });
    }
  }

  /**
   * Resolves the credentials of a request. Undefined when none were given; throws AUTHENTICATION_FAILED
   * when they were given but are not valid (bad, expired, revoked, suspended owner).
   */
  async authenticate(credentials: { bearer?: string; apiKey?: string }): Promise<Principal | undefined> {
    if (credentials.bearer !== undefined) return this.fromBearer(credentials.bearer);
    if (credentials.apiKey !== undefined) return this.fromApiKey(credentials.apiKey, true);
    return undefined;
  }

  /**
   * Re-checks the credentials of a long-lived request (a stream) without its access token: the session, the
   * API key and the user must still hold. The token's own expiry is not checked again, so a stream opened with
   * a valid token stays open until its session, key or user is revoked. Resolves to the principal as it is
   * now (roles may have changed); throws AUTHENTICATION_FAILED once the credentials no longer hold.
   */
  async recheck(principal: Principal, credentials: { apiKey?: string }): Promise<Principal> {
    if (principal.method === 'api_key') {
      if (credentials.apiKey === undefined) throw authFailed('invalid_api_key', 'The API key is invalid');
      return this.fromApiKey(credentials.apiKey, false);
    }
    if (principal.sessionId === undefined) throw authFailed('session_revoked', 'The session has ended');
    return this.sessionPrincipal(principal.sessionId, principal.userId);
  }

  /**
   * Calls `listener` each time cached credentials are dropped: a revocation or a user change, made on this
   * instance or announced by another. Returns the function that stops it.
   */
  onInvalidated(listener: (m: Invalidation) => void): () => void {
    this.invalidationListeners.add(listener);
    return () => this.invalidationListeners.delete(listener);
  }

  async createApiKey(
    principal: Principal,
    name: string,
    scopes: string[] | undefined,
    expiresAt: string | null,
  ) {
    const granted = principal.permissions;
    const wanted = scopes && scopes.length > 0 ? scopes : [...granted];
    // `*` asks for whatever the owner holds (at each use): an owner logged in may ask for it, and so may an API
    // key that itself holds all its owner holds. A key narrowed to fewer scopes may not, or it would mint a key
    // wider than itself (an admin's read:system key making a `*` key that administers everything).
    const mayAskForAll = holdsAllOfOwner(principal);
    const outside = wanted.filter((s) =>
      s === '*' ? !mayAskForAll : !granted.includes('*') && !granted.includes(s),
    );
    if (outside.length > 0) {
      throw new AppError('AUTHORIZATION_DENIED', 'An API key cannot hold scopes its owner does not have', {
        details: { field: 'scopes', reason: 'not held by the owner', scopes: outside },
      });
    }
    // Stored in UTC like every other timestamp, whatever offset it was sent with: `+05:00` compared as text
    // against UTC would keep an expired key working and refuse a valid one.
    const expires = expiresAt === null ? null : new Date(expiresAt).toISOString();
    if (expires !== null && expires <= nowIso()) {
      throw new AppError('VALIDATION_ERROR', 'expires_at must be in the future', {
        details: { field: 'expires_at', reason: 'in the past' },
      });
    }
    return this.deps.apiKeys.create(principal.userId, name, wanted, expires);
  }

  private async fromBearer(token: string): Promise<Principal> {
    const claims = await this.deps.tokens.verify(token);
    if (!claims) throw authFailed('invalid_token', 'The access token is invalid or expired');
    return this.sessionPrincipal(claims.sid, claims.sub, true);
  }

  /** The principal of a session that must still be open, for its user who must still be active. */
  private async sessionPrincipal(sessionId: string, userId: string, noteUse = false): Promise<Principal> {
    let session = this.sessions.get(sessionId);
    if (!session) {
      session = await this.deps.sessionStore.findById(sessionId);
      if (!session) throw authFailed('session_revoked', 'The session has ended');
      this.sessions.set(sessionId, session);
    }
    if (session.revoked_at !== null || session.user_id !== userId || session.expires_at <= nowIso()) {
      throw authFailed('session_revoked', 'The session has ended');
    }
    const user = await this.activeUser(userId);
    if (noteUse) this.noteActivity(session);
    const { roles, permissions, isAdmin } = accessOf(user);
    return {
      userId: user.id,
      username: user.username,
      roles,
      permissions,
      isAdmin,
      method: 'jwt',
      sessionId: session.id,
    };
  }

  /** Keeps a session's last_activity true to within a minute without a write on every request. */
  private noteActivity(session: SessionRow): void {
    const now = Date.now();
    if (now - Date.parse(session.last_activity) < ACTIVITY_RESOLUTION_MS) return;
    this.sessions.set(session.id, { ...session, last_activity: new Date(now).toISOString() });
    void this.deps.sessionStore.touch(session.id).catch(() => {});
  }

  /** `counted`: a use of the key (a request), as opposed to a stream re-checking the key it opened with. */
  private async fromApiKey(key: string, counted: boolean): Promise<Principal> {
    // Keyed by the key's hash: the raw key is a secret and stays out of the cache.
    const cacheKey = sha256Hex(key);
    let row = this.keys.get(cacheKey);
    if (!row) {
      row = await this.deps.apiKeys.findByKey(key);
      if (!row) throw authFailed('invalid_api_key', 'The API key is invalid');
      this.keys.set(cacheKey, row);
    }
    if (row.revoked_at !== null) throw authFailed('invalid_api_key', 'The API key has been revoked');
    if (row.expires_at !== null && Date.parse(row.expires_at) <= Date.now())
      throw authFailed('api_key_expired', 'The API key has expired');
    const user = await this.activeUser(row.user_id);
    const { roles, permissions: owner, isAdmin } = accessOf(user);
    const scopes = scopesOf(row);
    // A key never grants more than its owner holds now, even if the owner lost a role since;
    // a `*` key holds whatever its owner holds.
    const permissions = owner.includes('*')
      ? scopes
      : scopes.includes('*')
        ? owner
        : scopes.filter((s) => owner.includes(s));
    if (counted) this.keyUse.set(row.id, { uses: (this.keyUse.get(row.id)?.uses ?? 0) + 1, at: nowIso() });
    return {
      userId: user.id,
      username: user.username,
      roles,
      permissions,
      isAdmin,
      method: 'api_key',
      apiKeyId: row.id,
    };
  }

  private async activeUser(userId: string): Promise<UserRow> {
    let user = this.users.get(userId);
    if (!user) {
      user = await this.deps.users.findById(userId);
      if (!user) throw authFailed('user_not_found', 'The account no longer exists');
      user = await this.refreshSuspension(user);
      this.users.set(userId, user);
    }
    this.assertActive(user);
    return user;
  }

  /** A suspension with a duration ends by itself once its time is up. */
  private async refreshSuspension(user: UserRow): Promise<UserRow> {
    if (user.status === 'suspended' && user.suspended_until !== null && user.suspended_until <= nowIso()) {
      await this.deps.users.update(user.id, {
        status: 'active',
        suspended_until: null,
        suspension_reason: null,
      });
      return { ...user, status: 'active', suspended_until: null, suspension_reason: null };
    }
    return user;
  }

  private assertActive(user: UserRow): void {
    if (user.status === 'suspended') throw authFailed('account_suspended', 'The account is suspended');
    if (user.status !== 'active') throw authFailed('account_inactive', 'The account is not active');
  }

  private async issue(user: UserRow, sessionId: string, refreshToken: string): Promise<LoginResult> {
    const cfg = this.deps.config().auth;
    const roles = rolesOf(user);
    const permissions = permissionsOf(roles);
    return {
      access_token: await this.deps.tokens.sign(
        user.id,
        sessionId,
        permissions,
        cfg.access_token_ttl_seconds,
      ),
      token_type: 'Bearer',
      expires_in: cfg.access_token_ttl_seconds,
      refresh_token: refreshToken,
      refresh_expires_in: cfg.refresh_token_ttl_seconds,
      user: { id: user.id, username: user.username, roles, permissions },
      password_change_required: user.password_change_required === 1,
    };
  }

  private dropCached(m: Invalidation): void {
    for (const id of m.sessionIds ?? []) this.sessions.delete(id);
    if (m.userId) {
      this.users.delete(m.userId);
      this.sessions.deleteWhere((s) => s.user_id === m.userId);
      this.keys.deleteWhere((k) => k.user_id === m.userId);
    }
    if (m.apiKeyId) this.keys.deleteWhere((k) => k.id === m.apiKeyId);
    for (const listener of this.invalidationListeners) {
      try {
        listener(m);
      } catch {
        // A listener's failure is its own; the caches are dropped and the revocation stands.
      }
    }
  }

  /**
   * Writes the counted uses of API keys (every 5 s, and before a listing of keys is read), in one transaction,
   * one flush after another, so a listing waits for what an earlier flush already took.
   */
  flushKeyUse(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const batch = [...this.keyUse.entries()].map(([id, use]) => ({ id, ...use }));
      this.keyUse.clear();
      await this.deps.apiKeys.recordUses(batch).catch(() => {});
    });
    return this.flushing;
  }
}

/**
 * A session holds all its user holds; an API key does when it was not narrowed (`*`, or every permission of
 * its owner's roles).
 */
export function holdsAllOfOwner(principal: Principal): boolean {
  if (principal.method !== 'api_key') return true;
  const held = expandPermissions(principal.permissions);
  return expandPermissions(permissionsOf(principal.roles)).every((p) => held.includes(p));
}

// The roles and permissions of a user row, worked out once per row object: the cached rows (LocalCache) are
// frozen and reused until the user changes, so this is a lookup on every request after the first.
const accessByUser = new WeakMap<
  UserRow,
  { roles: readonly string[]; permissions: readonly string[]; isAdmin: boolean }
>();

function accessOf(user: UserRow) {
  let access = accessByUser.get(user);
  if (access === undefined) {
    const roles = Object.freeze(rolesOf(user));
    access = { roles, permissions: Object.freeze(permissionsOf(roles)), isAdmin: roles.includes('admin') };
    accessByUser.set(user, access);
  }
  return access;
}
