import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';

const EventStatus = Type.Union([
  Type.Literal('emitted'),
  Type.Literal('processing'),
  Type.Literal('processed'),
  Type.Literal('failed'),
]);

const Criteria = Type.Object(
  {
    older_than_days: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 36_500,
        description:
          'Events emitted more than this many days before the request; 0 (default): every event before it',
      }),
    ),
    event_types: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
        maxItems: 100,
        description: 'Types or patterns (wildcards allowed); absent: every type',
      }),
    ),
    status: Type.Optional(Type.Array(EventStatus, { maxItems: 4 })),
  },
  { additionalProperties: false },
);

export const PurgeBody = Type.Object(
  {
    criteria: Criteria,
    dry_run: Type.Optional(Type.Boolean({ default: false, description: 'Only count' })),
    batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
  },
  { additionalProperties: false },
);

export const PurgeStart = Type.Object({
  purge_id: Type.String({ examples: ['prg_01jd8x2k4v0000000000000000'] }),
  task_id: Type.String({
    description: 'The task running the purge: DELETE /api/v1/tasks/{task_id} cancels it',
  }),
  status: Type.Literal('started'),
  dry_run: Type.Boolean(),
  events_to_purge: Type.Integer({ minimum: 0 }),
  estimated_duration_minutes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: 'From the rate the last purge measured; null before any purge has run',
  }),
  cutoff: Timestamp,
  started_at: Timestamp,
});

export const PurgeRecord = Type.Object({
  purge_id: Type.String(),
  task_id: Type.String(),
  status: Type.Union(
    [
      Type.Literal('started'),
      Type.Literal('in_progress'),
      Type.Literal('completed'),
      Type.Literal('failed'),
      Type.Literal('cancelled'),
    ],
    { description: 'started → in_progress → completed | failed | cancelled' },
  ),
  dry_run: Type.Boolean(),
  criteria: Criteria,
  cutoff: Timestamp,
  batch_size: Type.Integer(),
  scheduled: Type.Boolean({ description: 'Started by the daily retention job' }),
  events_to_purge: Type.Integer(),
  events_purged: Type.Integer(),
  progress: Type.Object({
    events_purged: Type.Integer(),
    total_events: Type.Integer(),
    percentage: Type.Number({ minimum: 0, maximum: 100 }),
  }),
  started_at: Timestamp,
  estimated_completion: Type.Union([Timestamp, Type.Null()]),
  completed_at: Type.Union([Timestamp, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
});

export const PurgeIdParams = Type.Object(
  { purge_id: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);
