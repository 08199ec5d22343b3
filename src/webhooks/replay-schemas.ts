import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';

const EventFilter = Type.Object(
  {
    event_types: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
        maxItems: 100,
        description: 'Types or patterns (`order.*`, `user.**`); absent: every type',
      }),
    ),
    start_time: Type.Optional(Type.String({ format: 'date-time' })),
    end_time: Type.Optional(Type.String({ format: 'date-time' })),
    correlation_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);

const ReplayMode = Type.Union([Type.Literal('sequential'), Type.Literal('parallel')], {
  description: "sequential: each event's deliveries settle before the next event; parallel: queued ahead",
});

export const ReplayBody = Type.Object(
  {
    event_filter: Type.Optional(EventFilter),
    target_subscribers: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
        maxItems: 1000,
        description: 'Subscription ids; empty or absent: every active subscription an event matches',
      }),
    ),
    replay_mode: Type.Optional(ReplayMode),
    delay_between_events_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, default: 0 })),
  },
  { additionalProperties: false },
);

export const ReplayStart = Type.Object({
  replay_id: Type.String({ examples: ['rpl_01jd8x2k4v0000000000000000'] }),
  task_id: Type.String({
    description: 'The task running the replay: DELETE /api/v1/tasks/{task_id} cancels it',
  }),
  status: Type.Literal('started'),
  events_to_replay: Type.Integer({ minimum: 0 }),
  estimated_duration_minutes: Type.Integer({
    minimum: 0,
    description: 'From the latency measured on recent deliveries and the requested delay',
  }),
  started_at: Timestamp,
});

export const ReplayRecord = Type.Object({
  replay_id: Type.String(),
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
  progress: Type.Object({
    events_replayed: Type.Integer({ description: 'Events whose replayed deliveries all settled' }),
    total_events: Type.Integer(),
    percentage: Type.Number({ minimum: 0, maximum: 100 }),
  }),
  deliveries: Type.Object({
    queued: Type.Integer(),
    delivered: Type.Integer(),
    failed: Type.Integer(),
  }),
  events_skipped: Type.Integer({
    description:
      'Selected events with nothing to deliver: no target subscription matches them, or they were purged before the replay reached them',
  }),
  event_filter: EventFilter,
  target_subscribers: Type.Array(Type.String()),
  replay_mode: ReplayMode,
  delay_between_events_ms: Type.Integer(),
  started_at: Timestamp,
  estimated_completion: Type.Union([Timestamp, Type.Null()]),
  completed_at: Type.Union([Timestamp, Type.Null()]),
  errors: Type.Array(
    Type.Object({ event_id: Type.String(), subscription_id: Type.String(), error: Type.String() }),
    { description: 'Failed deliveries (the first 100)' },
  ),
  error_count: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why the replay failed' }),
});

export const ReplayIdParams = Type.Object(
  { replay_id: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);
