import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';

const JsonObject = Type.Record(Type.String(), Type.Unknown());

export const EventTypeParams = Type.Object({
  event_type: Type.String({
    maxLength: 255,
    description: 'An exact event type: 1–10 dot-separated segments of [A-Za-z0-9_-], no wildcards',
    examples: ['order.created'],
  }),
});

export const EventTypeBody = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    schema: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'JSON Schema (draft-07, with the formats of ajv-formats) of the event data; unknown keywords are refused',
      examples: [
        {
          type: 'object',
          required: ['order_id', 'amount'],
          properties: { order_id: { type: 'string' }, amount: { type: 'number', minimum: 0 } },
        },
      ],
    }),
    examples: Type.Optional(
      Type.Array(JsonObject, {
        maxItems: 10,
        description: 'Example data payloads; each must match the schema',
      }),
    ),
  },
  { additionalProperties: false },
);

const Listeners = Type.Object({
  subscriptions: Type.Array(
    Type.Object({
      subscription_id: Type.String(),
      name: Type.String(),
      status: Type.String({ examples: ['active'] }),
    }),
    { description: "Webhook subscriptions whose patterns match the type: the caller's own; an admin's, all" },
  ),
  plugins: Type.Array(Type.String(), {
    description: 'Ids of the installed plugins with a subscription whose patterns match the type',
  }),
});

export const EventTypeEntry = Type.Object({
  event_type: Type.String({ examples: ['order.created'] }),
  description: Type.String(),
  schema: JsonObject,
  examples: Type.Array(JsonObject),
  registered_by: Type.String({
    description: '`admin`, or `plugin:<id>` for a type declared in an installed plugin’s manifest',
    examples: ['admin'],
  }),
  updated_by: Type.String({ description: 'The administrator who last changed it, or the plugin id' }),
  created_at: Timestamp,
  updated_at: Timestamp,
  listeners: Listeners,
});

export const EventTypeList = Type.Object({
  event_types: Type.Array(EventTypeEntry),
  catalogue_strict: Type.Boolean({
    description: 'events.catalogue_strict: whether emits of a type not listed here are refused',
  }),
});
