import type { FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { AuthService } from '../auth/auth-service.js';
import { readerOf } from '../events/event-routes.js';
import type { EventService } from '../events/event-service.js';
import { AppError } from '../http/app-error.js';
import { errorBody } from '../http/error-handler.js';
import { nowIso } from '../kernel/new-id.js';
import { StreamConnection } from './stream-connection.js';
import { streamCredentials } from './stream-credentials.js';
import type { StreamHub } from './stream-hub.js';
import { parseFilters, parsePatterns, patternsOf, withinPatternLimit } from './stream-request.js';
import type { StreamPlan } from './stream-routes.js';
import { WsSink } from './ws-sink.js';

/** How long a socket opened without patterns may take to send its first `subscribe` before the default applies. */
const IMPLICIT_AFTER_MS = 1000;

/**
 * One WebSocket client. Messages are handled one at a time, in order. A bad message is answered with an
 * `error` message; the socket stays open.
 */
export function serveWebSocket(
  socket: WebSocket,
  request: FastifyRequest,
  plan: StreamPlan,
  deps: { hub: StreamHub; events: EventService; auth: AuthService },
): void {
  const sink = new WsSink(socket);
  const connection = new StreamConnection(
    deps.hub,
    sink,
    readerOf(request),
    streamCredentials(request, deps.auth),
  );
  socket.on('close', () => connection.end());
  let chain = Promise.resolve();

  const subscribed = () => ({
    message_type: 'subscribed',
    patterns: connection.patterns,
    filters: connection.filters,
  });

  // Like SSE, a socket opened without patterns receives every event it may read (`*`) — unless it says what it
  // wants first: a client sends its `subscribe` as soon as the socket opens, so the default starts only when
  // none came within IMPLICIT_AFTER_MS, from the point the socket opened (read from the store: no event of
  // that wait is missed), with a `subscribed` message marked `implicit`. Its first subscribe then replaces it.
  let implicit = false;
  let pending: NodeJS.Timeout | undefined;
  if (plan.explicitPatterns || plan.from) {
    connection.select(plan.patterns, plan.filters, plan.from);
    sink.message(subscribed());
  } else {
    const opened = {
      sequence: deps.hub.lastSequence,
      eventId: deps.hub.lastVisibleTo(connection.reader).eventId,
    };
    pending = setTimeout(() => {
      pending = undefined;
      implicit = true;
      connection.select(plan.patterns, plan.filters, opened);
      sink.message({ ...subscribed(), implicit: true });
    }, IMPLICIT_AFTER_MS);
    socket.on('close', () => clearTimeout(pending));
  }
  const decided = () => {
    clearTimeout(pending);
    pending = undefined;
  };

  const handle = async (raw: RawData, isBinary: boolean) => {
    let message: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(isBinary ? '' : raw.toString());
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error();
      message = parsed as Record<string, unknown>;
    } catch {
      throw new AppError('VALIDATION_ERROR', 'Messages must be JSON objects with an action', {
        status: 400,
        details: { field: 'message', reason: 'malformed JSON' },
      });
    }
    switch (message['action']) {
      case 'ping':
        sink.message({ message_type: 'pong', timestamp: nowIso() });
        return;
      case 'subscribe': {
        decided();
        const added = parsePatterns(patternsOf(message['patterns']));
        const patterns = withinPatternLimit([
          ...new Set([...(implicit ? [] : connection.patterns), ...(added.length > 0 ? added : ['*'])]),
        ]);
        const filters =
          message['filters'] === undefined ? connection.filters : parseFilters(message['filters']);
        const lastId = message['last_event_id'];
        if (lastId !== undefined && typeof lastId !== 'string') {
          throw new AppError('VALIDATION_ERROR', 'last_event_id must be a string', {
            details: { field: 'last_event_id', reason: 'must be a string' },
          });
        }
        const from = lastId ? await deps.events.resumePoint(lastId, connection.reader) : undefined;
        connection.select(patterns, filters, from);
        implicit = false;
        sink.message(subscribed());
        return;
      }
      case 'unsubscribe': {
        decided();
        const asked = parsePatterns(patternsOf(message['patterns']));
        // What was actually removed: every pattern for a bare unsubscribe, else those asked for that it held.
        const removed =
          asked.length === 0 ? connection.patterns : connection.patterns.filter((p) => asked.includes(p));
        const remaining = connection.patterns.filter((p) => !removed.includes(p));
        implicit = false;
        if (remaining.length === 0) connection.deselect();
        else connection.select(remaining, connection.filters);
        sink.message({ message_type: 'unsubscribed', patterns: remaining, removed });
        return;
      }
      default:
        throw new AppError('VALIDATION_ERROR', 'action must be subscribe, unsubscribe or ping', {
          details: { field: 'action', reason: 'unknown action' },
        });
    }
  };

  socket.on('message', (raw, isBinary) => {
    chain = chain
      .then(async () => {
        // Answers wait for a client that does not read them, and so do its further messages.
        await sink.holdReading();
        await handle(raw, isBinary);
      })
      .catch((err: unknown) => {
        const e =
          err instanceof AppError
            ? err
            : new AppError('INTERNAL_ERROR', `An internal error occurred (request ${request.id})`);
        if (!(err instanceof AppError)) request.log.error({ err }, 'websocket message failed');
        sink.message({
          message_type: 'error',
          // The envelope's error object, as an HTTP answer would carry it (validation errors list their fields).
          error: errorBody(e, request.id, nowIso()).error,
        });
      });
  });
}
