export interface Task {
  id: string;
  type: string;
  status: string;
  progress: number;
  created_at: string;
  started_at?: string | null;
  estimated_completion?: string | null;
  completed_at?: string | null;
  cancelled_at?: string | null;
  details?: {
    steps?: { name: string; status: string; progress?: number }[];
    [key: string]: unknown;
  };
  result?: unknown;
  error?: unknown;
  logs?: { timestamp: string; level: string; message: string }[];
}

/** Answers carry a task either as `data.task` or as `data` itself. */
export function unwrapTask(d: { task?: Task } & Partial<Task>): Task {
  return (d.task ?? d) as Task;
}

/**
 * The id of the task a started operation answered with: `task_id`, `task.id`, the last part of `task_url`
 * (`/api/v1/tasks/rst_…`), or `id` of a task.
 */
export function startedTaskId(d: unknown): string | null {
  if (!d || typeof d !== 'object') return null;
  const o = d as Record<string, unknown>;
  if (typeof o['task_id'] === 'string') return o['task_id'];
  if (typeof o['task_url'] === 'string')
    return decodeURIComponent(o['task_url'].split('/').pop() ?? '') || null;
  const task = o['task'];
  if (task && typeof task === 'object' && typeof (task as Record<string, unknown>)['id'] === 'string')
    return (task as Record<string, string>)['id'] ?? null;
  if (typeof o['id'] === 'string' && o['id'].startsWith('task_')) return o['id'];
  return null;
}
