/**
 * Row type of the log store (migration 0004-metrics-logs on PostgreSQL; its own `logs.db` file on SQLite).
 * `level_value` is pino's number (30 info, 40 warn, 50 error) so "this level and above" is a range query.
 */
export interface LogEntriesTable {
  id: string;
  timestamp: string;
  level: string;
  level_value: number;
  component: string;
  message: string;
  request_id: string | null;
  user_id: string | null;
  ip_address: string | null;
  /** JSON object: every field of the record besides the columns above, secrets already redacted. */
  metadata: string;
}

export interface LogTables {
  log_entries: LogEntriesTable;
}
