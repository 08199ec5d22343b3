import { Type } from '@sinclair/typebox';
import { PageQuery, Timestamp } from '../http/envelope.js';

/** The outbox statuses (event_outbox.status). */
export const DELIVERY_STATUSES = ['pending', 'delivering', 'delivered', 'failed', 'dropped'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const DeliveryStatusSchema = Type.Union(
  DELIVERY_STATUSES.map((s) => Type.Literal(s)),
  {
    description:
      'pending (waiting for its first or next attempt) → delivering (an attempt under way) → delivered | ' +
      'failed (retries exhausted, a refused target or a 410) | dropped (the event expired first)',
  },
);

export const SubscriptionDeliveryQuery = Type.Object(
  {
    status: Type.Optional(DeliveryStatusSchema),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const SubscriptionDelivery = Type.Object({
  delivery_id: Type.String({
    description: 'The same as the X-Platform-Delivery-Id (webhook-id) header of its requests',
    examples: ['dlv_01jd8x2k4v7m3n9p0q1r2s3t4u'],
  }),
  event_id: Type.String({ examples: ['evt_01jd8x2k4v0000000000000000'] }),
  event_type: Type.String({ examples: ['order.created'] }),
  status: DeliveryStatusSchema,
  attempts: Type.Integer({ minimum: 0, description: 'Attempts made so far' }),
  next_attempt_at: Type.Union([Timestamp, Type.Null()], {
    description: 'When the next attempt is due; only while pending, else null',
  }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  replay_id: Type.Union([Type.String(), Type.Null()], {
    description: "The replay that queued this delivery; null for the event's own delivery",
  }),
  response_status: Type.Union([Type.Integer(), Type.Null()], {
    description: "The last attempt's HTTP status; null before any attempt or when no answer came",
  }),
  latency_ms: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
    description: "The last attempt's duration",
  }),
  last_attempt_at: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** A delivery of a subscription, in a path. */
export const DeliveryParams = Type.Object(
  {
    subscription_id: Type.String({ minLength: 1, maxLength: 128 }),
    delivery_id: Type.String({ minLength: 1, maxLength: 128 }),
  },
  { additionalProperties: false },
);

/** One attempt of a delivery (a `delivery_attempts` row). */
export const DeliveryAttempt = Type.Object({
  attempt: Type.Integer({ minimum: 1, description: 'Its number within the delivery, from 1' }),
  status: Type.String({
    examples: ['failed'],
    description: 'delivered, or failed (an error or a refusing answer; another attempt may follow)',
  }),
  attempted_at: Timestamp,
  response_status: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The HTTP status answered; null when no answer came (timeout, refused connection)',
  }),
  latency_ms: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'How long it took' }),
  error: Type.Union([Type.String(), Type.Null()]),
  next_attempt_at: Type.Union([Timestamp, Type.Null()], {
    description: 'When the attempt failed and another followed: when that one was due',
  }),
});
