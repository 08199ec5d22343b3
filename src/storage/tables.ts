import type { BackupTables } from '../backups/backup-tables.js';
import type { EventTables } from '../events/event-tables.js';
import type { EventTypesTable } from '../events/event-type-store.js';
import type { LogTables } from '../logs/log-tables.js';
import type { MetricsTables } from '../metrics/metrics-tables.js';
import type { PluginTables } from '../plugins/plugin-tables.js';
import type { SecurityTables } from '../security/security-tables.js';
import type { TaskTables } from '../tasks/task-tables.js';

/**
 * Row types of every table. Timestamps are ISO 8601 strings with milliseconds (sortable as text),
 * JSON columns are text, booleans are 0/1 integers: one representation on SQLite and PostgreSQL,
 * so queries, migrations and logical backups are the same on both.
 */
export interface UsersTable {
  id: string;
  username: string;
  email: string;
  password_hash: string;
  full_name: string;
  roles: string;
  status: string;
  email_verified: number;
  last_login: string | null;
  login_count: number;
  failed_login_attempts: number;
  locked_until: string | null;
  last_password_change: string | null;
  password_change_required: number;
  suspended_until: string | null;
  suspension_reason: string | null;
  profile: string;
  preferences: string;
  created_at: string;
  updated_at: string;
}

/** Failed logins in a row for a name that belongs to no account (lower case), locked like an account's. */
export interface LoginLockoutsTable {
  name: string;
  failed_login_attempts: number;
  locked_until: string | null;
  updated_at: string;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  device: string;
  ip_address: string;
  created_at: string;
  last_activity: string;
  expires_at: string;
  revoked_at: string | null;
  revoked_reason: string | null;
}

export interface RefreshTokensTable {
  token_hash: string;
  session_id: string;
  created_at: string;
  used_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string;
  key_hash: string;
  key_preview: string;
  scopes: string;
  created_at: string;
  expires_at: string | null;
  last_used: string | null;
  usage_count: number;
  revoked_at: string | null;
}

export interface AuditLogTable {
  id: string;
  timestamp: string;
  admin_user: string;
  actor_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  details: string;
  ip_address: string;
  user_agent: string;
}

export interface ConfigOverridesTable {
  key: string;
  value: string;
  updated_at: string;
  updated_by: string;
}

export interface SystemStateTable {
  key: string;
  value: string;
  updated_at: string;
}

export interface BlockedIpsTable {
  id: string;
  cidr: string;
  reason: string;
  created_at: string;
  created_by: string;
  expires_at: string | null;
}

/** A caller's `Idempotency-Key` (migration 0021): running while `status_code` is null, else the stored answer. */
export interface IdempotencyKeysTable {
  scope: string;
  key: string;
  fingerprint: string;
  owner: string;
  status_code: number | null;
  response_body: string | null;
  locked_until: string | null;
  created_at: string;
  expires_at: string;
}

export interface Tables
  extends EventTables,
    SecurityTables,
    BackupTables,
    MetricsTables,
    LogTables,
    TaskTables,
    PluginTables {
  users: UsersTable;
  login_lockouts: LoginLockoutsTable;
  sessions: SessionsTable;
  refresh_tokens: RefreshTokensTable;
  api_keys: ApiKeysTable;
  audit_log: AuditLogTable;
  config_overrides: ConfigOverridesTable;
  system_state: SystemStateTable;
  blocked_ips: BlockedIpsTable;
  idempotency_keys: IdempotencyKeysTable;
  event_types: EventTypesTable;
}
