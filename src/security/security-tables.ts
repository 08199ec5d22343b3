/**
 * Row types of the security module's tables (migration 0005-admin). Same representation as every table:
 * ISO timestamps and JSON in text columns, so SQLite and PostgreSQL store them alike.
 */
export interface FailedLoginsTable {
  id: string;
  occurred_at: string;
  username: string;
  user_id: string | null;
  ip_address: string;
  reason: string;
}

export interface SecurityAlertsTable {
  id: string;
  type: string;
  severity: string;
  title: string;
  description: string;
  status: string;
  affected_resources: string;
  metadata: string;
  /** The rule's deduplication key while the alert is open; null once resolved (a unique index keeps one open alert per key). */
  open_key: string | null;
  occurrences: number;
  created_at: string;
  updated_at: string;
  acknowledged_at: string | null;
  acknowledged_by: string | null;
  resolved_at: string | null;
  resolved_by: string | null;
  note: string;
}

export interface SecurityScansTable {
  id: string;
  type: string;
  status: string;
  components: string;
  severity_threshold: string;
  findings: string;
  checks: string;
  error: string | null;
  requested_by: string;
  task_id: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  duration_ms: number | null;
}

export interface SecurityTables {
  failed_logins: FailedLoginsTable;
  security_alerts: SecurityAlertsTable;
  security_scans: SecurityScansTable;
}
