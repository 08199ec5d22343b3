import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, pagination } from '../http/envelope.js';
import { recordedKey, repeatOfTakenKey, requestIdempotencyRef } from '../http/idempotency.js';
import { plainJson } from '../http/plain-json.js';
import { extend } from '../kernel/extend.js';
import { requestOrigin } from '../kernel/platform-events.js';
import { IdempotencyKeyTaken } from '../storage/idempotency-store.js';
import { readerKey } from './event-data.js';
import type { EventListCache } from './event-list-cache.js';
import {
  AuditTrail,
  EmitBody,
  EventDetail,
  EventIdParams,
  EventList,
  EventSummary,
  ListQuery,
} from './event-schemas.js';
import type { EventService, Reader } from './event-service.js';
import type { EventsTable } from './event-tables.js';
import { eventSummary } from './event-views.js';

const tags = ['events'];

/** The request's principal as a reader of events: its permissions are an API key's narrowed scopes. */
export const readerOf = (request: FastifyRequest): Reader => ({
  userId: request.principal!.userId,
  isAdmin: request.principal!.isAdmin,
  permissions: request.principal!.permissions,
});

const FILTER_KEYS = [
  'event_type',
  'source',
  'start_time',
  'end_time',
  'correlation_id',
  'priority',
  'status',
] as const;

/**
 * The answer of an emit whose Idempotency-Key was recorded with it, made of what the event's row keeps so that a
 * repeat is answered with it byte for byte: the envelope's `timestamp` is the event's, its `request_id` the one
 * in the event's metadata (the emitting request's), its status the one an emit answers (the stored row's may
 * have moved on since).
 */
function recordedAnswer(row: EventsTable, requestId: string) {
  const event = eventSummary(row.status === 'emitted' ? row : extend(row, { status: 'emitted' }));
  return { success: true as const, data: { event }, timestamp: row.timestamp, request_id: requestId };
}

/** Test-only (ADR 0011): the process kills itself after an emit's commit, before its answer is stored. */
const EXIT_AFTER_EMIT_COMMIT = process.env['PLATFORM_TEST_EXIT_AFTER_EMIT_COMMIT'] === '1';

export function registerEventRoutes(
  app: App,
  deps: { events: EventService; listCache: EventListCache },
): void {
  const { events, listCache } = deps;

  app.post(
    '/api/v1/events',
    {
      config: {
        access: access.permission('events:emit'),
        idempotent: true,
        // The key is written with the event, in its batch: its repeat is answered from the event.
        idempotentRecorded: async (_request, eventId) => {
          const row = await events.stored(eventId);
          if (row === undefined) return undefined;
          const { request_id } = JSON.parse(row.metadata) as { request_id: string };
          return recordedAnswer(row, request_id);
        },
        // An emit whose key was claimed the usual way (recordedKey): its event carries the key too, so a retry
        // after a crash between the commit and the stored answer finds it (ADR 0011).
        idempotentCommitted: async (request, ref, since) => {
          const row = await events.emittedUnder(ref, since);
          return row && ok(request, { event: eventSummary(row) });
        },
      },
      schema: {
        operationId: 'emitEvent',
        tags,
        summary: 'Emit an event; answered after it is stored with its deliveries queued',
        description:
          'The event and one outbox row per matching durable subscription are written in one transaction; ' +
          'the 201 is sent after the commit. Errors: 400 INVALID_EVENT_TYPE, 413 EVENT_TOO_LARGE, ' +
          '410 EVENT_EXPIRED (expires_at in the past), 422 VALIDATION_ERROR (also for a source or type reserved ' +
          'for the platform: system, auth, plugin:<id>; auth.*, security.*, system.*, …; and for `data` that does ' +
          'not match its type’s schema in the event catalogue, GET /api/v1/events/types, naming the field as ' +
          '`data.<path>`), 422 EVENT_TYPE_NOT_REGISTERED (a type not in the catalogue when events.catalogue_strict is on).',
        body: EmitBody,
        response: {
          201: Envelope(Type.Object({ event: EventSummary })),
          410: { $ref: 'ErrorEnvelope#' },
          413: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request, reply) => {
      const p = request.principal!;
      const key = recordedKey(request);
      // A recorded key links its event by the key's row (its owner). The event carries the key itself
      // (`idempotency_ref`) only when the key was claimed the usual way, for a retry after a crash to find it.
      const origin = Object.assign(requestOrigin(request), {
        emitter: { userId: p.userId, username: p.username },
        idempotencyRef: key ? undefined : requestIdempotencyRef(request),
        idempotencyKey: key,
      });
      let row: EventsTable;
      try {
        row = await events.emit(request.body, origin);
      } catch (err) {
        if (!(err instanceof IdempotencyKeyTaken)) throw err;
        // Another request holds the key: this one is its repeat, or runs once that one failed.
        if (await repeatOfTakenKey(request, reply)) return reply;
        origin.idempotencyKey = undefined;
        origin.idempotencyRef = requestIdempotencyRef(request);
        row = await events.emit(request.body, origin);
        return reply.code(201).send(ok(request, { event: eventSummary(row) }));
      }
      // Test-only (docs/adr/0011): dies like a killed process between the emit's commit and its answer.
      if (EXIT_AFTER_EMIT_COMMIT) process.kill(process.pid, 'SIGKILL');
      const answer = key ? recordedAnswer(row, request.id) : ok(request, { event: eventSummary(row) });
      return reply.code(201).send(answer);
    },
  );

  app.get(
    '/api/v1/events',
    {
      config: { access: access.permission('events:subscribe') },
      ...plainJson,
      schema: {
        operationId: 'listEvents',
        tags,
        summary: 'Stored events, filtered, sorted and paged',
        querystring: ListQuery,
        response: { 200: Envelope(EventList) },
      },
    },
    async (request) => {
      const q = request.query;
      const page = q.page ?? 1;
      const perPage = q.per_page ?? 20;
      const query = {
        eventType: q.event_type,
        source: q.source,
        startTime: q.start_time === undefined ? undefined : new Date(q.start_time).toISOString(),
        endTime: q.end_time === undefined ? undefined : new Date(q.end_time).toISOString(),
        correlationId: q.correlation_id,
        priority: q.priority,
        status: q.status,
        sort: q.sort ?? 'timestamp',
        order: q.order ?? 'desc',
        page,
        perPage,
      } as const;
      const reader = readerOf(request);
      const filters: Record<string, string | number> = {};
      for (const key of FILTER_KEYS) {
        const value = q[key];
        if (value !== undefined) filters[key] = value;
      }
      const key = JSON.stringify([readerKey(reader), query, filters]);
      const data = await listCache.page(key, async () => {
        const { items, total, totalExact } = await events.list(query, reader);
        return {
          events: items,
          pagination: { ...pagination(page, perPage, total), ...(totalExact ? {} : { total_exact: false }) },
          filters_applied: filters,
        };
      });
      return ok(request, data);
    },
  );

  app.get(
    '/api/v1/events/:event_id',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'getEvent',
        tags,
        summary: 'One event with its data, metadata and delivery information',
        description:
          '404 EVENT_NOT_FOUND for an unknown event, and for one the caller may not read (confidential, or a ' +
          "platform event without its family's permission); " +
          '410 EVENT_EXPIRED after its expires_at.',
        params: EventIdParams,
        response: {
          200: Envelope(Type.Object({ event: EventDetail })),
          404: { $ref: 'ErrorEnvelope#' },
          410: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request) => ok(request, { event: await events.get(request.params.event_id, readerOf(request)) }),
  );

  app.get(
    '/api/v1/events/:event_id/audit',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'getEventAudit',
        tags,
        summary: 'The audit trail of one event: emission, deliveries, failures, retries, replays',
        params: EventIdParams,
        response: { 200: Envelope(AuditTrail), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const trail = await events.auditTrail(request.params.event_id, readerOf(request));
      return ok(request, { event_id: request.params.event_id, audit_trail: trail });
    },
  );
}
