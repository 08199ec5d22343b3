import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import { PurgeBody, PurgeIdParams, PurgeRecord, PurgeStart } from './purge-schemas.js';
import type { PurgeService } from './purge-service.js';

const tags = ['events'];

export function registerPurgeRoutes(app: App, deps: { purge: PurgeService; audit: AuditLog }): void {
  const { purge, audit } = deps;

  app.post(
    '/api/v1/events/purge',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'purgeEvents',
        tags,
        summary: 'Delete stored events by age, type and status (a cancellable `event_purge` task)',
        description:
          'Deletes the events emitted before `older_than_days` days ago (0: before the request) that match the ' +
          'types and statuses, with their deliveries, attempts and audit entries, in batches of `batch_size`. ' +
          '`dry_run` only counts. Errors: 400 INVALID_EVENT_TYPE, 422 VALIDATION_ERROR.',
        body: PurgeBody,
        response: { 202: Envelope(PurgeStart) },
      },
    },
    async (request, reply) => {
      const p = request.principal!;
      const started = await purge.start(request.body, { id: p.userId, username: p.username });
      await audit.record(request, {
        action: 'event.purge',
        resourceType: 'event_purge',
        resourceId: started.purge_id,
        details: { ...request.body, events_to_purge: started.events_to_purge },
      });
      return reply.code(202).send(ok(request, started));
    },
  );

  app.get(
    '/api/v1/events/purge/:purge_id',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'getEventPurge',
        tags,
        summary: 'The status and progress of a purge',
        params: PurgeIdParams,
        response: { 200: Envelope(Type.Object({ purge: PurgeRecord })), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => ok(request, { purge: await purge.get(request.params.purge_id) }),
  );
}
