import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { AuthService } from '../auth/auth-service.js';
import { readerOf } from '../events/event-routes.js';
import type { EventService } from '../events/event-service.js';
import { checkPriorityRange } from '../events/priority-range.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { nowIso } from '../kernel/new-id.js';
import { SseSink } from './sse-sink.js';
import { StreamConnection, type StreamFilters } from './stream-connection.js';
import { streamCredentials } from './stream-credentials.js';
import type { StreamHub } from './stream-hub.js';
import { parsePatterns } from './stream-request.js';
import { serveWebSocket } from './ws-session.js';

const StreamQuery = Type.Object(
  {
    patterns: Type.Optional(
      Type.Array(Type.String(), { description: 'Repeated or comma-separated; default every type (`*`)' }),
    ),
    source: Type.Optional(Type.Array(Type.String(), { description: 'Only events from these sources' })),
    priority_min: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    priority_max: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    last_event_id: Type.Optional(
      Type.String({
        description: 'Resume after this event; a non-empty Last-Event-ID header takes precedence',
      }),
    ),
    token: Type.Optional(
      Type.String({ description: 'Access token or API key, for clients without headers' }),
    ),
  },
  { additionalProperties: false },
);

/** What a stream request asked for, worked out before the response starts (so errors are still JSON). */
export interface StreamPlan {
  patterns: string[];
  explicitPatterns: boolean;
  filters: StreamFilters;
  from: { sequence: number; eventId: string } | undefined;
}

const plans = new WeakMap<FastifyRequest, StreamPlan>();

export function registerStreamRoutes(
  app: App,
  deps: { hub: StreamHub; events: EventService; auth: AuthService },
): void {
  const { hub, events } = deps;

  app.addHook('preClose', (done) => {
    hub.closeAll('The server is shutting down; reconnect with last_event_id');
    done();
  });

  for (const url of ['/api/v1/events/stream', '/v1/events/stream']) {
    app.route({
      method: 'GET',
      url,
      // A HEAD request must not open a stream.
      exposeHeadRoute: false,
      config: { access: access.permission('events:subscribe'), queryToken: true },
      schema: {
        operationId: url.startsWith('/api') ? 'streamEvents' : 'streamEventsShortPath',
        tags: ['events'],
        summary: 'Live events over server-sent events, or over a WebSocket on upgrade',
        description:
          'SSE: `id:` is the event id, `event:` its type, `data:` JSON {event_id, event_type, source, timestamp, ' +
          'priority, data, sequence}; a `: ping` comment every events.stream_heartbeat_seconds; id-only ' +
          'checkpoint frames keep a filtered stream’s resume point recent. Resume with the Last-Event-ID ' +
          'header or last_event_id; the header wins when both come (unknown → 404 EVENT_NOT_FOUND before the stream starts). WebSocket: ' +
          'client messages {action: subscribe | unsubscribe | ping, patterns, filters, last_event_id}; ' +
          'server messages {message_type: event | subscribed | unsubscribed | pong | checkpoint | error | overflow | shutdown}.',
        querystring: StreamQuery,
        ...(url.startsWith('/api') ? {} : { hide: true }),
        response: {
          200: {
            description: 'text/event-stream',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          404: { $ref: 'ErrorEnvelope#' },
        },
      },
      preHandler: async (request) => {
        const q = request.query as typeof StreamQuery.static;
        const header = request.headers['last-event-id'];
        // Empty (`?last_event_id=`, an empty header) means no resume point, as "" does in a WebSocket message.
        // The header wins: an EventSource sends it on every reconnect with the last id it saw, but keeps the URL
        // it was opened with, so a query resume point is only right on the first connection.
        const lastId =
          (typeof header === 'string' && header ? header : undefined) || q.last_event_id || undefined;
        const patterns = parsePatterns(q.patterns);
        checkPriorityRange(q.priority_min, q.priority_max, { min: 'priority_min', max: 'priority_max' });
        plans.set(request, {
          patterns: patterns.length > 0 ? patterns : ['*'],
          explicitPatterns: patterns.length > 0,
          filters: {
            ...(q.source ? { source: q.source.flatMap((s) => s.split(',')).filter(Boolean) } : {}),
            ...(q.priority_min !== undefined || q.priority_max !== undefined
              ? { priority: { min: q.priority_min, max: q.priority_max } }
              : {}),
          },
          from: lastId === undefined ? undefined : await events.resumePoint(lastId, readerOf(request)),
        });
      },
      handler: async (request, reply) => {
        const plan = plans.get(request)!;
        reply.hijack();
        const raw = reply.raw;
        const headers: Record<string, string> = {};
        // The rate-limit headers set by the request gates; a hijacked reply does not send them itself.
        for (const [name, value] of Object.entries(reply.getHeaders())) {
          if (value !== undefined) headers[name] = String(value);
        }
        raw.writeHead(200, {
          ...headers,
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
          'x-request-id': request.id,
        });
        raw.write(`retry: 3000\n: connected ${nowIso()}\n\n`);
        const connection = new StreamConnection(
          hub,
          new SseSink(raw),
          readerOf(request),
          streamCredentials(request, deps.auth),
        );
        raw.on('close', () => connection.end());
        connection.select(plan.patterns, plan.filters, plan.from);
      },
      wsHandler: (socket: WebSocket, request: FastifyRequest) => {
        serveWebSocket(socket, request, plans.get(request)!, { hub, events, auth: deps.auth });
      },
    });
  }
}
