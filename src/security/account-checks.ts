import { scopesOf } from '../auth/api-key-store.js';
import { rolesOf } from '../users/user-store.js';
import type { Finding, SecurityCheck } from './security-check.js';

const administrators: SecurityCheck = {
  name: 'administrator_accounts',
  component: 'permissions',
  description: 'Administrators who never logged in, and administrator passwords never changed',
  async run({ db }) {
    const admins = await db
      .selectFrom('users')
      .select([
        'id',
        'username',
        'roles',
        'last_login',
        'created_at',
        'last_password_change',
        'password_change_required',
      ])
      .where('status', '=', 'active')
      .where('roles', 'like', '%"admin"%')
      .orderBy('created_at', 'asc')
      .execute();
    const first = admins[0]?.id;
    const out: Finding[] = [];
    for (const a of admins.filter((u) => rolesOf(u).includes('admin'))) {
      if (a.last_login === null) {
        out.push({
          severity: 'medium',
          title: `Administrator '${a.username}' has never logged in`,
          description: `The administrator account '${a.username}' was created on ${a.created_at} and never used: an unused privileged account is easy to miss if it is taken over.`,
          affected_resources: [`user:${a.username}`],
          recommendation: 'Remove the admin role or the account if it is not needed.',
        });
      }
      const neverChanged =
        a.password_change_required === 1 ||
        a.last_password_change === null ||
        a.last_password_change <= a.created_at;
      if (neverChanged) {
        const bootstrap = a.id === first && a.username === 'admin';
        out.push({
          severity: bootstrap ? 'high' : 'medium',
          title: bootstrap
            ? 'The first administrator still has its initial password'
            : `Administrator '${a.username}' still has the password it was given`,
          description: bootstrap
            ? "The password of 'admin' has not changed since the platform created the account at first start (from PLATFORM_ADMIN_PASSWORD or generated and printed to the console)."
            : `The password of '${a.username}' was set by whoever created the account and has not been changed since ${a.last_password_change ?? a.created_at}.`,
          affected_resources: [`user:${a.username}`],
          recommendation: 'Log in as that user and change the password (POST /api/v1/auth/change-password).',
        });
      }
    }
    return out;
  },
};

const apiKeys: SecurityCheck = {
  name: 'api_keys',
  component: 'permissions',
  description: 'Stale and never-used API keys; administrator keys with every scope and no expiry',
  async run({ db, config, now }) {
    const nowIso = now.toISOString();
    const staleBefore = new Date(
      now.getTime() - config.security.api_key_stale_days * 86_400_000,
    ).toISOString();
    const keys = await db
      .selectFrom('api_keys')
      .innerJoin('users', 'users.id', 'api_keys.user_id')
      .select([
        'api_keys.id as id',
        'api_keys.name as name',
        'api_keys.scopes as scopes',
        'api_keys.created_at as created_at',
        'api_keys.last_used as last_used',
        'api_keys.expires_at as expires_at',
        'users.username as username',
        'users.roles as roles',
      ])
      .where('api_keys.revoked_at', 'is', null)
      .where((eb) => eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', nowIso)]))
      .execute();
    const out: Finding[] = [];
    for (const k of keys) {
      const resource = `api_key:${k.id}`;
      if (k.last_used === null) {
        out.push({
          severity: k.created_at < staleBefore ? 'medium' : 'low',
          title: `API key '${k.name}' of '${k.username}' has never been used`,
          description: `Created on ${k.created_at} and never used. Keys nobody uses are keys nobody watches.`,
          affected_resources: [resource, `user:${k.username}`],
          recommendation: 'Revoke it if it is not needed (DELETE /api/v1/auth/api-keys/{key_id}).',
        });
      } else if (k.last_used < staleBefore) {
        out.push({
          severity: 'medium',
          title: `API key '${k.name}' of '${k.username}' is stale`,
          description: `Last used on ${k.last_used}, more than ${config.security.api_key_stale_days} days ago.`,
          affected_resources: [resource, `user:${k.username}`],
          recommendation: 'Revoke it if it is not needed.',
        });
      }
      const scopes = scopesOf(k);
      if (rolesOf(k).includes('admin') && scopes.includes('*') && k.expires_at === null) {
        out.push({
          severity: 'medium',
          title: `API key '${k.name}' holds every permission and never expires`,
          description: `The key of administrator '${k.username}' carries the scope * without an expiry date.`,
          affected_resources: [resource, `user:${k.username}`],
          recommendation: 'Create keys with only the scopes they need and an expires_at.',
        });
      }
    }
    return out;
  },
};

const lockedAccounts: SecurityCheck = {
  name: 'locked_accounts',
  component: 'permissions',
  description: 'Accounts locked right now after repeated failed logins',
  async run({ db, now }) {
    const rows = await db
      .selectFrom('users')
      .select(['username', 'failed_login_attempts', 'locked_until'])
      .where('locked_until', '>', now.toISOString())
      .limit(100)
      .execute();
    return rows.map((u) => ({
      severity: 'medium' as const,
      title: `Account '${u.username}' is locked after failed logins`,
      description: `${u.failed_login_attempts} failed logins; locked until ${u.locked_until}. Someone may be guessing its password.`,
      affected_resources: [`user:${u.username}`],
      recommendation:
        'Check the failed logins in the security alerts; reset the password if it may be known.',
    }));
  },
};

export const permissionChecks: SecurityCheck[] = [administrators, apiKeys, lockedAccounts];
