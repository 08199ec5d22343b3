import type { LogEntriesTable } from './log-tables.js';

export interface LogQuery {
  /** This level and above (pino numbers: 20 DEBUG, 30 INFO, 40 WARNING, 50 ERROR). */
  minLevel?: number;
  component?: string;
  startTime?: string;
  endTime?: string;
  /** Case-insensitive substring of the message. */
  search?: string;
  page: number;
  perPage: number;
}

/**
 * One page of an export of the whole store (`exportPage`): entries written at or before `until`, newest first
 * (by timestamp, then id), from just after `after` (the last entry of the page before; none for the first).
 */
export interface LogExportPage {
  until: string;
  after?: { timestamp: string; id: string } | undefined;
  limit: number;
}

/**
 * Where log records are kept for the logs endpoint. Embedded mode: a SQLite file of its own beside the main
 * database; PostgreSQL mode: a table in the main database. Both speak the same queries through Kysely.
 */
export interface LogStore {
  readonly kind: 'sqlite' | 'postgres';
  insert(rows: LogEntriesTable[]): Promise<void>;
  query(q: LogQuery): Promise<{ rows: LogEntriesTable[]; total: number }>;
  /** A page of the whole store by keyset (no count, no OFFSET): each page costs the same at any depth. */
  exportPage(q: LogExportPage): Promise<LogEntriesTable[]>;
  deleteOlderThan(timestamp: string): Promise<number>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
