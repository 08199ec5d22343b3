import { type Static, Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';
import { isJsonObject } from '../kernel/json-object.js';
import type { TaskLogRow, TaskRow } from './task-store.js';

const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const TaskStepView = Type.Object({
  name: Type.String(),
  status: Type.String({ examples: ['completed', 'running', 'pending'] }),
  progress: Type.Number({ minimum: 0, maximum: 1 }),
});

export const TaskLogView = Type.Object({
  timestamp: Timestamp,
  level: Type.String({ examples: ['INFO'] }),
  message: Type.String(),
});

export const TaskView = Type.Object({
  id: Type.String({ examples: ['task_01jd8x2k4v0000000000000000'] }),
  type: Type.String({ examples: ['database_cleanup', 'plugin_update'] }),
  status: Type.Union(
    [Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')],
    { description: 'running → completed | failed | cancelled' },
  ),
  progress: Type.Number({ minimum: 0, maximum: 1 }),
  details: Type.Object(
    { steps: Type.Optional(Type.Array(TaskStepView)) },
    {
      additionalProperties: true,
      description: 'Type-specific parameters and state; `steps` when the type has steps',
    },
  ),
  result: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: 'What a completed task produced',
  }),
  error: Type.Union([Type.String(), Type.Null()], {
    description: 'Why a task failed ("interrupted" when its instance stopped or died while it ran)',
  }),
  created_by: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  started_at: NullableTimestamp,
  estimated_completion: Type.Union([Timestamp, Type.Null()], {
    description: 'Projected from the progress made so far; null until there is some',
  }),
  completed_at: NullableTimestamp,
  cancelled_at: NullableTimestamp,
  attempts: Type.Integer({ minimum: 0, description: 'Executions so far (above 1 only for resumed tasks)' }),
  cancellable: Type.Optional(
    Type.Boolean({
      description:
        'Whether DELETE /api/v1/tasks/{id} cancels it now: false once it has ended, or once it is past the ' +
        'point where stopping would leave its work half done (a restore from its database step on)',
    }),
  ),
  logs: Type.Optional(Type.Array(TaskLogView)),
});
export type TaskViewData = Static<typeof TaskView>;

function parseObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return isJsonObject(value) ? value : { value };
  } catch {
    return null;
  }
}

/** The API shape of a task; `logs` only when given (the detail view). */
export function taskView(row: TaskRow, logs?: TaskLogRow[]): TaskViewData {
  return {
    id: row.id,
    type: row.type,
    status: row.status as TaskViewData['status'],
    progress: Math.round(Number(row.progress) * 10_000) / 10_000,
    details: parseObject(row.details) ?? {},
    result: parseObject(row.result),
    error: row.error,
    created_by: row.created_by,
    created_at: row.created_at,
    started_at: row.started_at,
    estimated_completion: row.status === 'running' ? row.estimated_completion : null,
    completed_at: row.completed_at,
    cancelled_at: row.cancelled_at,
    attempts: row.attempts,
    cancellable: row.status === 'running' && Number(row.cancellable ?? 1) === 1,
    ...(logs
      ? { logs: logs.map((l) => ({ timestamp: l.timestamp, level: l.level, message: l.message })) }
      : {}),
  };
}
