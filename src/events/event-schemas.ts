import { Type } from '@sinclair/typebox';
import { PageQuery, Pagination, Timestamp } from '../http/envelope.js';

const Priority = Type.Integer({ minimum: 1, maximum: 10, description: '1–10, 10 most urgent' });
const SecurityLevel = Type.Union(
  [Type.Literal('public'), Type.Literal('internal'), Type.Literal('confidential')],
  { description: 'confidential: encrypted at rest, readable only by admins and the emitter' },
);
const EventStatus = Type.Union([
  Type.Literal('emitted'),
  Type.Literal('processing'),
  Type.Literal('processed'),
  Type.Literal('failed'),
]);
const FreeObject = Type.Record(Type.String(), Type.Unknown());

export const EmitBody = Type.Object(
  {
    event_type: Type.Optional(
      Type.String({
        description: '1–10 dot-separated segments of [A-Za-z0-9_-]',
        examples: ['user.created'],
      }),
    ),
    type: Type.Optional(Type.String({ description: 'Alias of event_type (the short emission form)' })),
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 128, default: 'api' })),
    data: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'The payload. Client-encrypted form: {encrypted: true, encryption_method, encrypted_payload}, stored as is.',
      }),
    ),
    metadata: Type.Optional(FreeObject),
    priority: Type.Optional(Priority),
    expires_at: Type.Optional(Type.String({ format: 'date-time' })),
    security_level: Type.Optional(SecurityLevel),
  },
  { additionalProperties: false },
);

export const EventSummary = Type.Object({
  event_id: Type.String({ examples: ['evt_01jd0v4w8g3k2x9q7h5m6n1p2r'] }),
  event_type: Type.String(),
  source: Type.String(),
  timestamp: Timestamp,
  priority: Type.Integer(),
  status: EventStatus,
  subscriber_count: Type.Integer({
    description: 'Matching durable subscriptions plus matching live stream clients at emission',
  }),
});

const Metadata = Type.Object(
  {
    correlation_id: Type.String(),
    request_id: Type.String(),
    user_agent: Type.String(),
    ip_address: Type.String(),
    processing_time_ms: Type.Number({ description: 'From the emit request to the write of the event' }),
    trace_id: Type.Optional(
      Type.String({
        description: 'The W3C trace the event belongs to (docs/tracing.md)',
        pattern: '^[0-9a-f]{32}$',
      }),
    ),
    traceparent: Type.Optional(
      Type.String({ description: 'The span its deliveries, plugin calls and stream messages descend from' }),
    ),
    tracestate: Type.Optional(Type.String({ description: 'The emitter’s tracestate, as sent' })),
  },
  { additionalProperties: true },
);

const EventCommon = {
  ...EventSummary.properties,
  sequence: Type.Integer({ description: 'Global, gap-free position in commit order' }),
  security_level: SecurityLevel,
  expires_at: Type.Union([Timestamp, Type.Null()]),
  metadata: Metadata,
};

export const EventListItem = Type.Object({
  ...EventCommon,
  data_preview: Type.Optional(FreeObject),
});

export const EventDetail = Type.Object({
  ...EventCommon,
  data: FreeObject,
  delivery_info: Type.Object({
    total_subscribers: Type.Integer({
      description:
        'Durable subscriptions the event was queued for: all of them for an admin, those the reader owns otherwise',
    }),
    successful_deliveries: Type.Integer(),
    failed_deliveries: Type.Integer(),
    pending_deliveries: Type.Integer(),
    delivery_attempts: Type.Array(
      Type.Object({
        subscriber: Type.String({ description: 'Subscription id' }),
        status: Type.String({ examples: ['delivered'] }),
        attempt: Type.Integer(),
        delivery_time: Timestamp,
        processing_time_ms: Type.Number(),
        response_status: Type.Union([Type.Integer(), Type.Null()]),
        error: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
  }),
});

export const ListQuery = Type.Object(
  {
    event_type: Type.Optional(Type.String({ description: 'A type or a pattern (`user.*`, `user.**`, `*`)' })),
    source: Type.Optional(Type.String()),
    start_time: Type.Optional(Type.String({ format: 'date-time' })),
    end_time: Type.Optional(Type.String({ format: 'date-time' })),
    correlation_id: Type.Optional(Type.String()),
    priority: Type.Optional(Priority),
    status: Type.Optional(EventStatus),
    ...PageQuery,
    sort: Type.Optional(
      Type.Union([Type.Literal('timestamp'), Type.Literal('priority'), Type.Literal('event_type')], {
        default: 'timestamp',
      }),
    ),
    order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
  },
  { additionalProperties: false },
);

export const EventList = Type.Object({
  events: Type.Array(EventListItem),
  pagination: Type.Composite([
    Pagination,
    Type.Object({
      total_exact: Type.Optional(
        Type.Boolean({
          description:
            'Present, and false, only when the count stopped 10,000 events past the page: `total` (and ' +
            '`pages`) are then a lower bound, and has_next is true. Absent when `total` is exact.',
        }),
      ),
    }),
  ]),
  filters_applied: Type.Record(Type.String(), Type.Union([Type.String(), Type.Integer()]), {
    description: 'The filters of the query, echoed',
  }),
});

export const EventIdParams = Type.Object(
  { event_id: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);

export const AuditTrail = Type.Object({
  event_id: Type.String(),
  audit_trail: Type.Array(
    Type.Object({
      timestamp: Timestamp,
      action: Type.String({ examples: ['event_emitted', 'event_delivered'] }),
      actor: Type.String(),
      details: FreeObject,
    }),
  ),
});
