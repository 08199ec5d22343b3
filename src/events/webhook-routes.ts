import { Type } from '@sinclair/typebox';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import { callerOf } from './subscription-routes.js';
import { CreateWebhookBody, WebhookIdParams, WebhookView } from './subscription-schemas.js';
import type { SubscriptionService } from './subscription-service.js';
import { webhookView } from './subscription-views.js';

const tags = ['webhooks'];

/** The short webhook API (§4.4): a webhook is a webhook subscription with the default policies. */
export function registerWebhookRoutes(app: App, deps: { subscriptions: SubscriptionService }): void {
  const { subscriptions } = deps;

  app.post(
    '/api/v1/webhooks',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'createWebhook',
        tags,
        summary: 'Register a webhook for event patterns; the secret is shown in full in this response only',
        body: CreateWebhookBody,
        response: { 201: Envelope(Type.Object({ webhook: WebhookView })), 429: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request, reply) => {
      const { url, events, secret, name } = request.body;
      const created = await subscriptions.create(callerOf(request), {
        event_patterns: events,
        webhook_config: { url, ...(secret === undefined ? {} : { secret }) },
        ...(name === undefined ? {} : { name }),
      });
      return reply.code(201).send(ok(request, { webhook: webhookView(created.row, created.secret) }));
    },
  );

  app.get(
    '/api/v1/webhooks',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'listWebhooks',
        tags,
        summary: "The caller's webhooks (an admin's: everyone's)",
        response: { 200: Envelope(Type.Object({ webhooks: Type.Array(WebhookView) })) },
      },
    },
    async (request) => {
      const rows = await subscriptions.list(callerOf(request), { deliveryMethod: 'webhook' });
      return ok(request, { webhooks: rows.map((r) => webhookView(r)) });
    },
  );

  app.delete(
    '/api/v1/webhooks/:webhook_id',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'deleteWebhook',
        tags,
        summary: 'Delete a webhook',
        params: WebhookIdParams,
        response: { 200: MessageOnly, 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      await subscriptions.delete(callerOf(request), request.params.webhook_id);
      return done(request, 'Webhook deleted');
    },
  );
}
