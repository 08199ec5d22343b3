import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { readerOf } from '../events/event-routes.js';
import { callerOf } from '../events/subscription-routes.js';
import { SubscriptionIdParams } from '../events/subscription-schemas.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import type { DeliveryRecovery } from './delivery-recovery.js';
import { DeliveryParams } from './subscription-delivery-schemas.js';

const tags = ['events'];
const base = '/api/v1/events/subscriptions/:subscription_id';

const RecoverBody = Type.Object(
  {
    since: Type.String({ format: 'date-time', description: 'Start of the window (inclusive)' }),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'End of the window; default now' })),
  },
  { additionalProperties: false },
);

const errors = { 404: { $ref: 'ErrorEnvelope#' }, 409: { $ref: 'ErrorEnvelope#' } };

export function registerDeliveryRecoveryRoutes(
  app: App,
  deps: { recovery: DeliveryRecovery; audit: AuditLog },
): void {
  const { recovery, audit } = deps;

  app.post(
    `${base}/deliveries/:delivery_id/resend`,
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'resendSubscriptionDelivery',
        tags,
        summary: 'Send one settled (failed, delivered or dropped) delivery again, as a new delivery',
        description:
          'Queues the same event again for the subscription; the new delivery has its own id (its webhook-id) ' +
          'and carries `X-Platform-Replay: rsd_…`. Owner or admin. Errors: 404 SUBSCRIPTION_NOT_FOUND, ' +
          '404 DELIVERY_NOT_FOUND, 409 SUBSCRIPTION_NOT_ACTIVE (paused or in error), 409 RESOURCE_CONFLICT ' +
          '(the delivery is still pending or under way).',
        params: DeliveryParams,
        response: {
          202: Envelope(
            Type.Object({
              delivery_id: Type.String({ description: 'The new delivery' }),
              event_id: Type.String(),
              status: Type.Literal('pending'),
            }),
          ),
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const { subscription_id: subscriptionId, delivery_id: deliveryId } = request.params;
      const queued = await recovery.resend(
        callerOf(request),
        readerOf(request),
        subscriptionId,
        deliveryId,
        request.principal!.username,
      );
      await audit.record(request, {
        action: 'subscription.delivery_resent',
        resourceType: 'subscription',
        resourceId: subscriptionId,
        details: { delivery_id: deliveryId, new_delivery_id: queued.delivery_id, event_id: queued.event_id },
      });
      return reply.code(202).send(ok(request, queued));
    },
  );

  app.post(
    `${base}/recover`,
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'recoverSubscriptionDeliveries',
        tags,
        summary: 'Send again every failed delivery of a time window, and the events missed while not active',
        description:
          'Starts a `subscription.recover` task (progress at GET /api/v1/tasks/{task_id}, cancellable): every ' +
          'event of the window whose delivery to the subscription failed (and was not delivered since) is sent ' +
          'again, then every event of the window it would have received but never had a delivery of (emitted ' +
          'while it was paused or in error). Deliveries carry `X-Platform-Replay: <task_id>`. Owner or admin. ' +
          'Errors: 404 SUBSCRIPTION_NOT_FOUND, 409 SUBSCRIPTION_NOT_ACTIVE, 422 VALIDATION_ERROR.',
        params: SubscriptionIdParams,
        body: RecoverBody,
        response: {
          202: Envelope(Type.Object({ task_id: Type.String(), status: Type.Literal('pending') })),
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const p = request.principal!;
      const started = await recovery.startRecover(
        callerOf(request),
        request.params.subscription_id,
        request.body,
        { id: p.userId, username: p.username },
      );
      await audit.record(request, {
        action: 'subscription.recover',
        resourceType: 'subscription',
        resourceId: request.params.subscription_id,
        details: { ...request.body, task_id: started.task_id },
      });
      return reply.code(202).send(ok(request, started));
    },
  );
}
