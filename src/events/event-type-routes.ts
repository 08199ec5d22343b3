import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import { readerOf } from './event-routes.js';
import { EventTypeBody, EventTypeEntry, EventTypeList, EventTypeParams } from './event-type-schemas.js';
import type { EventTypeService } from './event-type-service.js';

const tags = ['events'];
const oneType = Envelope(Type.Object({ event_type: EventTypeEntry }));

/** The event catalogue: `/api/v1/events/types` (docs/events.md, "Event catalogue"). */
export function registerEventTypeRoutes(
  app: App,
  deps: { types: EventTypeService; audit: AuditLog; strict: () => boolean },
): void {
  const { types, audit } = deps;

  app.get(
    '/api/v1/events/types',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'listEventTypes',
        tags,
        summary: 'The event catalogue: registered types with their data schema, examples and listeners',
        description:
          'Emits of a listed type are validated against its schema (422 VALIDATION_ERROR naming the field, e.g. ' +
          '`data.amount`). Types come from administrators (PUT) and from installed plugins’ manifests ' +
          '(`events.types`). Listeners: the webhook subscriptions the caller may see and the plugins that subscribe.',
        response: { 200: Envelope(EventTypeList) },
      },
    },
    async (request) =>
      ok(request, {
        event_types: await types.list(readerOf(request)),
        catalogue_strict: deps.strict(),
      }),
  );

  app.get(
    '/api/v1/events/types/:event_type',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'getEventType',
        tags,
        summary: 'One type of the event catalogue',
        description: '404 RESOURCE_NOT_FOUND for a type that is not registered.',
        params: EventTypeParams,
        response: { 200: oneType, 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) =>
      ok(request, { event_type: await types.get(request.params.event_type, readerOf(request)) }),
  );

  app.put(
    '/api/v1/events/types/:event_type',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'putEventType',
        tags,
        summary: 'Register an event type with a JSON Schema for its data, or replace its registration',
        description:
          '201 when new, 200 when replaced; every instance validates with it from then on. Errors: ' +
          '400 INVALID_EVENT_TYPE (not an exact type), 409 RESOURCE_CONFLICT (an installed plugin declares the ' +
          'type), 422 VALIDATION_ERROR (a schema Ajv cannot compile or that does not describe an object, an ' +
          'example that does not match it, a type reserved for the platform).',
        params: EventTypeParams,
        body: EventTypeBody,
        response: {
          200: oneType,
          201: oneType,
          400: { $ref: 'ErrorEnvelope#' },
          409: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request, reply) => {
      const eventType = request.params.event_type;
      const created = await types.put(eventType, request.body, request.principal!.username);
      await audit.record(request, {
        action: created ? 'event_type.create' : 'event_type.update',
        resourceType: 'event_type',
        resourceId: eventType,
        details: { description: request.body.description ?? '' },
      });
      const entry = await types.get(eventType, readerOf(request));
      return reply.code(created ? 201 : 200).send(ok(request, { event_type: entry }));
    },
  );

  app.delete(
    '/api/v1/events/types/:event_type',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'deleteEventType',
        tags,
        summary: 'Remove an administrator’s type from the catalogue; its emits are no longer validated',
        description:
          '404 RESOURCE_NOT_FOUND for a type not registered; 409 RESOURCE_CONFLICT for a type an installed ' +
          'plugin declares (it leaves the catalogue when the plugin is uninstalled or no longer declares it).',
        params: EventTypeParams,
        response: {
          200: MessageOnly,
          404: { $ref: 'ErrorEnvelope#' },
          409: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request) => {
      const eventType = request.params.event_type;
      await types.remove(eventType);
      await audit.record(request, {
        action: 'event_type.delete',
        resourceType: 'event_type',
        resourceId: eventType,
      });
      return done(request, `The event type '${eventType}' was removed from the catalogue`);
    },
  );
}
