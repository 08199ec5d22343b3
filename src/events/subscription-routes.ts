import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import {
  CreateSubscriptionBody,
  SubscriptionIdParams,
  SubscriptionListQuery,
  SubscriptionView,
  UpdateSubscriptionBody,
} from './subscription-schemas.js';
import type { Caller, SubscriptionService } from './subscription-service.js';
import { subscriptionView } from './subscription-views.js';

const tags = ['events'];
const base = '/api/v1/events/subscriptions';
const Single = Envelope(Type.Object({ subscription: SubscriptionView }));
const Updated = Envelope(
  Type.Object({
    subscription: SubscriptionView,
    missed_since: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'Only when this update re-enabled a paused or failed subscription: since when it failed every ' +
          'attempt or stopped receiving events (POST .../recover with this as since sends them again)',
      }),
    ),
  }),
);

export const callerOf = (request: FastifyRequest): Caller => ({
  userId: request.principal!.userId,
  isAdmin: request.principal!.isAdmin,
  keyScopes: request.principal!.method === 'api_key' ? request.principal!.permissions : undefined,
});

export function registerSubscriptionRoutes(app: App, deps: { subscriptions: SubscriptionService }): void {
  const { subscriptions } = deps;

  app.post(
    base,
    {
      config: { access: access.permission('events:subscribe'), idempotent: true },
      schema: {
        operationId: 'createSubscription',
        tags,
        summary: 'Subscribe a webhook to events; the secret is shown in full in this response only',
        description:
          'Status is active (enabled: true, the default) or paused. At most events.max_subscriptions_per_user ' +
          'per user (429 SUBSCRIPTION_LIMIT_EXCEEDED). retry_policy defaults to {5, 30, true}; timeout_seconds ' +
          'to 10 (at most 60).',
        body: CreateSubscriptionBody,
        response: { 201: Single, 429: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request, reply) => {
      const { row, secret } = await subscriptions.create(callerOf(request), request.body);
      return reply.code(201).send(ok(request, { subscription: subscriptionView(row, secret) }));
    },
  );

  app.get(
    base,
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'listSubscriptions',
        tags,
        summary: "The caller's subscriptions (an admin's: everyone's)",
        querystring: SubscriptionListQuery,
        response: { 200: Envelope(Type.Object({ subscriptions: Type.Array(SubscriptionView) })) },
      },
    },
    async (request) => {
      const rows = await subscriptions.list(callerOf(request), {
        status: request.query.status,
        deliveryMethod: request.query.delivery_method,
        eventPattern: request.query.event_pattern,
      });
      return ok(request, { subscriptions: rows.map((r) => subscriptionView(r)) });
    },
  );

  app.get(
    `${base}/:subscription_id`,
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'getSubscription',
        tags,
        summary: 'One subscription',
        params: SubscriptionIdParams,
        response: { 200: Single, 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) =>
      ok(request, {
        subscription: subscriptionView(
          await subscriptions.get(callerOf(request), request.params.subscription_id),
        ),
      }),
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: `${base}/:subscription_id`,
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: method === 'PUT' ? 'updateSubscription' : 'patchSubscription',
        tags,
        summary: 'Change a subscription; only the fields given change',
        description:
          'enabled: false pauses it (events emitted meanwhile are not queued for it); enabled: true makes a ' +
          'paused or failed (error) subscription active again, and the answer then carries missed_since: ' +
          'since when it failed or missed events, to pass as `since` to POST .../recover. webhook_config ' +
          'may be partial, e.g. only url.',
        params: SubscriptionIdParams,
        body: UpdateSubscriptionBody,
        response: { 200: Updated, 404: { $ref: 'ErrorEnvelope#' } },
      },
      handler: async (request) => {
        const row = await subscriptions.update(
          callerOf(request),
          request.params.subscription_id,
          request.body,
        );
        const missed = row.missedSince === undefined ? {} : { missed_since: row.missedSince };
        return ok(request, { subscription: subscriptionView(row), ...missed });
      },
    });
  }

  app.delete(
    `${base}/:subscription_id`,
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'deleteSubscription',
        tags,
        summary: 'Delete a subscription and drop its pending deliveries',
        params: SubscriptionIdParams,
        response: { 200: MessageOnly, 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      await subscriptions.delete(callerOf(request), request.params.subscription_id);
      return done(request, 'Subscription deleted');
    },
  );
}
