import type { ApiKeyRow } from '../auth/api-key-store.js';
import { apiKeyIsActive } from '../auth/auth-views.js';
import { expandPermissions, permissionsOf } from '../auth/roles.js';
import type { SessionRow } from '../auth/session-store.js';
import { parseJsonObject } from '../kernel/json-object.js';
import { rolesOf, type UserRow } from './user-store.js';

type Status = 'active' | 'inactive' | 'suspended';

const PROFILE_DEFAULTS = { avatar_url: '', bio: '', location: '' };
const PREFERENCE_DEFAULTS = { theme: 'system', language: 'en', notifications: true };

const parseObject = (text: string): Record<string, unknown> => parseJsonObject(text) ?? {};

export const profileOf = (row: Pick<UserRow, 'profile'>) => ({
  ...PROFILE_DEFAULTS,
  ...(parseObject(row.profile) as Partial<typeof PROFILE_DEFAULTS>),
});

export const preferencesOf = (row: Pick<UserRow, 'preferences'>) => ({
  ...PREFERENCE_DEFAULTS,
  ...(parseObject(row.preferences) as Partial<typeof PREFERENCE_DEFAULTS>),
});

export function userListItem(row: UserRow) {
  return {
    id: row.id,
    username: row.username,
    email: row.email,
    full_name: row.full_name,
    roles: rolesOf(row),
    status: row.status as Status,
    email_verified: row.email_verified === 1,
    last_login: row.last_login,
    login_count: row.login_count,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The detail of a user without sessions and keys; never the password hash. */
export function userSummary(row: UserRow) {
  return {
    ...userListItem(row),
    permissions: expandPermissions(permissionsOf(rolesOf(row))),
    profile: profileOf(row),
    preferences: preferencesOf(row),
    metadata: {
      last_login: row.last_login,
      login_count: row.login_count,
      failed_login_attempts: row.failed_login_attempts,
      locked_until:
        row.locked_until !== null && row.locked_until > new Date().toISOString() ? row.locked_until : null,
      last_password_change: row.last_password_change,
      password_change_required: row.password_change_required === 1,
      suspended_until: row.status === 'suspended' ? row.suspended_until : null,
      suspension_reason: row.status === 'suspended' ? row.suspension_reason : null,
      created_at: row.created_at,
      updated_at: row.updated_at,
    },
  };
}

export function userSessionView(s: SessionRow) {
  return {
    id: s.id,
    device: s.device,
    ip_address: s.ip_address,
    // No geo-IP database ships with the platform; the address is all that is known.
    location: 'unknown',
    last_activity: s.last_activity,
    is_active: s.revoked_at === null && s.expires_at > new Date().toISOString(),
  };
}

export function userApiKeyView(k: ApiKeyRow) {
  return {
    id: k.id,
    name: k.name,
    key_preview: k.key_preview,
    last_used: k.last_used,
    is_active: apiKeyIsActive(k),
  };
}
