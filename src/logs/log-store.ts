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
 * Where log records are kept for the logs endpoint. Embedded mode: a SQLite file of its own beside the main
 * database; PostgreSQL mode: a table in the main database. Both speak the same queries through Kysely.
 */
export interface LogStore {
  readonly kind: 'sqlite' | 'postgres';
  insert(rows: LogEntriesTable[]): Promise<void>;
  query(q: LogQuery): Promise<{ rows: LogEntriesTable[]; total: number }>;
  deleteOlderThan(timestamp: string): Promise<number>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
