import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import { ReplayBody, ReplayIdParams, ReplayRecord, ReplayStart } from './replay-schemas.js';
import type { ReplayService } from './replay-service.js';

const tags = ['events'];

export function registerReplayRoutes(app: App, deps: { replay: ReplayService; audit: AuditLog }): void {
  const { replay, audit } = deps;

  app.post(
    '/api/v1/events/replay',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'replayEvents',
        tags,
        summary: 'Send stored events again to subscriptions (a cancellable `event_replay` task)',
        description:
          'Selects stored events by type patterns, time range and correlation id, and queues each for the target ' +
          'subscriptions it matches (all active ones when `target_subscribers` is empty). Deliveries carry ' +
          '`X-Platform-Replay: <replay_id>`. Errors: 400 INVALID_EVENT_TYPE, 404 SUBSCRIPTION_NOT_FOUND, ' +
          '409 RESOURCE_CONFLICT (a target is paused or in error), 422 VALIDATION_ERROR.',
        body: ReplayBody,
        response: {
          202: Envelope(ReplayStart),
          404: { $ref: 'ErrorEnvelope#' },
          409: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request, reply) => {
      const p = request.principal!;
      const started = await replay.start(request.body, { id: p.userId, username: p.username });
      await audit.record(request, {
        action: 'event.replay',
        resourceType: 'event_replay',
        resourceId: started.replay_id,
        details: { ...request.body, events_to_replay: started.events_to_replay },
      });
      return reply.code(202).send(ok(request, started));
    },
  );

  app.get(
    '/api/v1/events/replay/:replay_id',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'getEventReplay',
        tags,
        summary: 'The status and progress of a replay',
        params: ReplayIdParams,
        response: { 200: Envelope(Type.Object({ replay: ReplayRecord })), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => ok(request, { replay: await replay.get(request.params.replay_id) }),
  );
}
