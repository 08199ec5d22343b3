import { Type } from '@sinclair/typebox';
import { callerOf } from '../events/subscription-routes.js';
import { SubscriptionIdParams } from '../events/subscription-schemas.js';
import type { SubscriptionService } from '../events/subscription-service.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Pagination, pagination } from '../http/envelope.js';
import { deliveryNotFound } from './delivery-recovery.js';
import {
  DeliveryAttempt,
  DeliveryParams,
  SubscriptionDelivery,
  SubscriptionDeliveryQuery,
} from './subscription-delivery-schemas.js';
import type { SubscriptionDeliveryStore } from './subscription-delivery-store.js';

export function registerSubscriptionDeliveryRoutes(
  app: App,
  deps: { subscriptions: SubscriptionService; deliveries: SubscriptionDeliveryStore },
): void {
  const { subscriptions, deliveries } = deps;

  app.get(
    '/api/v1/events/subscriptions/:subscription_id/deliveries',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'listSubscriptionDeliveries',
        tags: ['events'],
        summary: "A subscription's deliveries, newest first, with their last attempt",
        description:
          'One entry per event queued for the subscription (and per replay of it). Same ownership as the ' +
          'subscription: its owner or an admin; anyone else gets 404 SUBSCRIPTION_NOT_FOUND. Every attempt of ' +
          'a delivery: GET .../deliveries/{delivery_id}/attempts.',
        params: SubscriptionIdParams,
        querystring: SubscriptionDeliveryQuery,
        response: {
          200: Envelope(
            Type.Object({ deliveries: Type.Array(SubscriptionDelivery), pagination: Pagination }),
          ),
          404: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request) => {
      const sub = await subscriptions.get(callerOf(request), request.params.subscription_id);
      const page = request.query.page ?? 1;
      const perPage = request.query.per_page ?? 20;
      const { items, total } = await deliveries.page(sub.id, {
        status: request.query.status,
        page,
        perPage,
      });
      return ok(request, { deliveries: items, pagination: pagination(page, perPage, total) });
    },
  );

  app.get(
    '/api/v1/events/subscriptions/:subscription_id/deliveries/:delivery_id/attempts',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'listSubscriptionDeliveryAttempts',
        tags: ['events'],
        summary: 'Every attempt of one delivery of a subscription, oldest first',
        description:
          'Its number, time, HTTP status, duration and error, and when the next was due after a failed one. ' +
          'Same ownership as the subscription. Errors: 404 SUBSCRIPTION_NOT_FOUND, 404 DELIVERY_NOT_FOUND.',
        params: DeliveryParams,
        response: {
          200: Envelope(Type.Object({ attempts: Type.Array(DeliveryAttempt) })),
          404: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request) => {
      const sub = await subscriptions.get(callerOf(request), request.params.subscription_id);
      const attempts = await deliveries.attempts(sub.id, request.params.delivery_id);
      if (!attempts) throw deliveryNotFound(sub.id, request.params.delivery_id);
      return ok(request, { attempts });
    },
  );
}
