import { Type } from '@sinclair/typebox';
import { callerOf } from '../events/subscription-routes.js';
import { SubscriptionIdParams } from '../events/subscription-schemas.js';
import type { SubscriptionService } from '../events/subscription-service.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Pagination, pagination } from '../http/envelope.js';
import { SubscriptionDelivery, SubscriptionDeliveryQuery } from './subscription-delivery-schemas.js';
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
          "subscription: its owner or an admin; anyone else gets 404 SUBSCRIPTION_NOT_FOUND. Every attempt's " +
          'details are on the event (GET /api/v1/events/{event_id}).',
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
}
