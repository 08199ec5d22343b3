import { Type } from '@sinclair/typebox';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
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
      config: { access: access.permission('events:subscribe'), idempotent: true },
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
      const created = await subscriptions
        .create(callerOf(request), {
          event_patterns: events,
          webhook_config: { url, ...(secret === undefined ? {} : { secret }) },
          ...(name === undefined ? {} : { name }),
        })
        .catch((err: unknown) => {
          throw inWebhookTerms(err);
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
      await subscriptions.delete(callerOf(request), request.params.webhook_id, { webhooksOnly: true });
      return done(request, 'Webhook deleted');
    },
  );
}

// The subscription's field names, as this route's body names them.
const WEBHOOK_FIELDS: Record<string, string> = {
  event_patterns: 'events',
  'webhook_config.url': 'url',
  'webhook_config.secret': 'secret',
};

/** A refusal of the subscription behind a webhook, naming the fields of `POST /api/v1/webhooks`. */
function inWebhookTerms(err: unknown): unknown {
  if (!(err instanceof AppError) || typeof err.details?.['field'] !== 'string') return err;
  // `webhook_config.url` → `url`; `event_patterns.2` → `events.2`.
  const rename = (field: string) => {
    const known = Object.keys(WEBHOOK_FIELDS).find((f) => field === f || field.startsWith(`${f}.`));
    return known ? WEBHOOK_FIELDS[known] + field.slice(known.length) : field;
  };
  const details: Record<string, unknown> = { ...err.details, field: rename(err.details['field'] as string) };
  const errors = err.details['errors'];
  if (Array.isArray(errors)) {
    details['errors'] = errors.map((e: { field?: unknown }) =>
      typeof e.field === 'string' ? { ...e, field: rename(e.field) } : e,
    );
  }
  return new AppError(err.code, err.message, {
    status: err.status,
    details,
    ...(err.headers ? { headers: err.headers } : {}),
  });
}
