import type { ApiKeyRow } from './api-key-store.js';
import { scopesOf } from './api-key-store.js';
import type { SessionRow } from './session-store.js';

export function sessionView(s: SessionRow, currentSessionId?: string) {
  return {
    id: s.id,
    device: s.device,
    ip_address: s.ip_address,
    // No geo-IP database ships with the platform; the address is all that is known.
    location: 'unknown',
    created_at: s.created_at,
    last_activity: s.last_activity,
    expires_at: s.expires_at,
    is_active: s.revoked_at === null && s.expires_at > new Date().toISOString(),
    is_current: s.id === currentSessionId,
  };
}

export function apiKeyView(k: ApiKeyRow) {
  return {
    id: k.id,
    name: k.name,
    key_preview: k.key_preview,
    scopes: scopesOf(k),
    created_at: k.created_at,
    expires_at: k.expires_at,
    last_used: k.last_used,
    usage_count: k.usage_count,
    is_active: apiKeyIsActive(k),
  };
}

/** Not revoked and not expired (compared as instants: rows stored before expiry times were made UTC kept their offset). */
export function apiKeyIsActive(k: ApiKeyRow): boolean {
  return k.revoked_at === null && (k.expires_at === null || Date.parse(k.expires_at) > Date.now());
}
