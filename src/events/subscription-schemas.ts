import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';

const Patterns = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
  minItems: 1,
  maxItems: 100,
  description: '`*` one segment, `**` zero or more, lone `*` every type',
  examples: [['user.*', 'order.**']],
});

const Filters = Type.Object(
  {
    source: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 100 })),
    priority: Type.Optional(
      Type.Object(
        {
          min: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
          max: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
        },
        { additionalProperties: false },
      ),
    ),
    data_filters: Type.Optional(
      Type.Record(Type.String({ minLength: 1 }), Type.Unknown(), {
        description: 'Dotted path in data → required value, or array of accepted values',
      }),
    ),
  },
  { additionalProperties: false },
);

const RetryPolicyInput = Type.Object(
  {
    max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
    retry_delay_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    exponential_backoff: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const WebhookUrl = Type.String({ minLength: 1, maxLength: 2048, description: 'http or https URL' });

const WebhookConfigInput = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    secret: Type.Optional(Type.String({ minLength: 8, maxLength: 256 })),
    retry_policy: Type.Optional(RetryPolicyInput),
    timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 60 })),
    rate_limit: Type.Optional(
      Type.Union([Type.Number({ minimum: 0.01, maximum: 10_000 }), Type.Null()], {
        description:
          'Deliveries per second at most to the target, across all instances (fractions allowed: 0.5 is one ' +
          'every 2 s); null or absent: no limit. In an update, null removes the limit.',
        examples: [5],
      }),
    ),
  },
  { additionalProperties: false },
);

const BatchConfigInput = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    max_batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    max_wait_time_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
  },
  { additionalProperties: false },
);

export const CreateSubscriptionBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    event_patterns: Patterns,
    filters: Type.Optional(Filters),
    delivery_method: Type.Optional(Type.Literal('webhook', { default: 'webhook' })),
    webhook_config: WebhookConfigInput,
    batch_config: Type.Optional(BatchConfigInput),
  },
  { additionalProperties: false },
);

export const UpdateSubscriptionBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    enabled: Type.Optional(Type.Boolean()),
    event_patterns: Type.Optional(Patterns),
    filters: Type.Optional(Filters),
    webhook_config: Type.Optional(WebhookConfigInput),
    batch_config: Type.Optional(BatchConfigInput),
  },
  { additionalProperties: false },
);

export const SubscriptionView = Type.Object({
  subscription_id: Type.String(),
  name: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('error')]),
  enabled: Type.Boolean(),
  owner_id: Type.String(),
  event_patterns: Type.Array(Type.String()),
  filters: Filters,
  delivery_method: Type.String(),
  webhook_url: Type.Union([Type.String(), Type.Null()]),
  webhook_config: Type.Union([
    Type.Object({
      url: Type.String(),
      secret: Type.String({ description: 'In full only in the creation response; masked after' }),
      retry_policy: Type.Object({
        max_attempts: Type.Integer(),
        retry_delay_seconds: Type.Integer(),
        exponential_backoff: Type.Boolean(),
      }),
      timeout_seconds: Type.Integer(),
      rate_limit: Type.Union([Type.Number(), Type.Null()], {
        description: 'Deliveries per second at most; null: no limit',
      }),
    }),
    Type.Null(),
  ]),
  batch_config: Type.Object({
    enabled: Type.Boolean(),
    max_batch_size: Type.Integer(),
    max_wait_time_seconds: Type.Integer(),
  }),
  plugin_id: Type.Union([Type.String(), Type.Null()]),
  events_delivered: Type.Integer(),
  events_failed: Type.Integer(),
  success_rate: Type.Number({ minimum: 0, maximum: 1, description: '1 until a delivery has failed' }),
  last_delivery: Type.Union([Timestamp, Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const SubscriptionListQuery = Type.Object(
  {
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('error')]),
    ),
    delivery_method: Type.Optional(Type.Union([Type.Literal('webhook'), Type.Literal('plugin')])),
    event_pattern: Type.Optional(Type.String({ description: 'Subscriptions listing this exact pattern' })),
  },
  { additionalProperties: false },
);

export const SubscriptionIdParams = Type.Object(
  { subscription_id: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);

export const CreateWebhookBody = Type.Object(
  {
    url: WebhookUrl,
    events: Patterns,
    secret: Type.Optional(Type.String({ minLength: 8, maxLength: 256 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const WebhookView = Type.Object({
  id: Type.String({ description: 'The id of the webhook subscription' }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  secret: Type.String({ description: 'In full only in the creation response; masked after' }),
  status: Type.String(),
  events_delivered: Type.Integer(),
  last_delivery: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
});

export const WebhookIdParams = Type.Object(
  { webhook_id: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);
