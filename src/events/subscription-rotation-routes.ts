import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import { DEFAULT_OVERLAP_HOURS, type SecretRotation } from './subscription-rotation.js';
import { callerOf } from './subscription-routes.js';
import { SubscriptionIdParams, SubscriptionView } from './subscription-schemas.js';
import { subscriptionView } from './subscription-views.js';

const RotateBody = Type.Object(
  {
    secret: Type.Optional(
      Type.String({ minLength: 8, maxLength: 256, description: 'The new secret; generated when absent' }),
    ),
    overlap_hours: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 720,
        default: DEFAULT_OVERLAP_HOURS,
        description: 'How long the replaced secret keeps signing too; 0 ends it at once',
      }),
    ),
  },
  { additionalProperties: false },
);

const Rotated = Type.Object({
  subscription: SubscriptionView,
  secret: Type.Optional(
    Type.String({ description: 'The new secret, only when it was generated (shown in this response only)' }),
  ),
  previous_secret_expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description:
      'Until when deliveries also carry the signature of the replaced secret; null with no overlap',
  }),
});

export function registerSecretRotationRoutes(
  app: App,
  deps: { rotation: SecretRotation; audit: AuditLog },
): void {
  const { rotation, audit } = deps;
  app.post(
    '/api/v1/events/subscriptions/:subscription_id/secret/rotate',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'rotateSubscriptionSecret',
        tags: ['events'],
        summary: "Rotate a webhook subscription's signing secret, keeping the old one valid for an overlap",
        description:
          'The new secret signs every delivery from now on. During the overlap (overlap_hours, default 24) each ' +
          'delivery carries both signatures: `webhook-signature: v1,<new> v1,<old>` and ' +
          '`X-Platform-Signature-256` (new) with `X-Platform-Signature-256-Previous` (old). The replaced secret ' +
          'is never shown; the rotation is audited (`subscription.secret_rotated`). Owner or admin; anyone ' +
          'else gets 404 SUBSCRIPTION_NOT_FOUND.',
        params: SubscriptionIdParams,
        body: RotateBody,
        response: { 200: Envelope(Rotated), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const { row, generated, previousExpiresAt } = await rotation.rotate(
        callerOf(request),
        request.params.subscription_id,
        request.body,
      );
      await audit.record(request, {
        action: 'subscription.secret_rotated',
        resourceType: 'subscription',
        resourceId: row.id,
        details: {
          secret_generated: generated !== undefined,
          overlap_hours: request.body.overlap_hours ?? DEFAULT_OVERLAP_HOURS,
          previous_secret_expires_at: previousExpiresAt,
        },
      });
      return ok(request, {
        subscription: subscriptionView(row),
        ...(generated === undefined ? {} : { secret: generated }),
        previous_secret_expires_at: previousExpiresAt,
      });
    },
  );
}
