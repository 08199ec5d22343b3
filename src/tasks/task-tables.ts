import type { ColumnType } from 'kysely';

/**
 * Row types of the task runner's tables (same conventions as `storage/tables.ts`: ISO text timestamps,
 * JSON as text, booleans as 0/1).
 */
export interface TasksTable {
  id: string;
  type: string;
  /** running | completed | failed | cancelled */
  status: string;
  /** 0..1 */
  progress: number;
  /** JSON object; `steps` is an array of {name, status, progress}. */
  details: string;
  /** JSON object once completed. */
  result: string | null;
  error: string | null;
  created_by: string | null;
  created_at: string;
  started_at: string | null;
  estimated_completion: string | null;
  completed_at: string | null;
  cancelled_at: string | null;
  updated_at: string;
  /** 1 when the type resumes after an interruption instead of failing. */
  resumable: number;
  /** The instance running it. */
  instance_id: string | null;
  /** A token unique to one execution, so a stale execution can never write over a newer one. */
  claim: string | null;
  /** The owner renews this while it runs; once it passes, the task is treated as interrupted. */
  lease_until: string | null;
  /** How many executions the task has had (more than one only for resumable types). */
  attempts: number;
  /** 1 while a cancel is accepted; 0 once the task is past its point of no return (migration 0017). */
  cancellable: ColumnType<number, number | undefined, number>;
}

export interface TaskLogsTable {
  id: string;
  task_id: string;
  /** Order of the lines one execution wrote within the same millisecond. */
  seq: number;
  timestamp: string;
  level: string;
  message: string;
}

export interface TaskTables {
  tasks: TasksTable;
  task_logs: TaskLogsTable;
}
