import { EventEmitter } from 'node:events';
import type { FastifyRequest } from 'fastify';
import { storableText } from './storable-text.js';

/**
 * Where a platform event came from: the HTTP request that caused it. Stored as the event's
 * `metadata.request_id`, `correlation_id` (the request's `X-Correlation-ID`, else its request id),
 * `user_agent` and `ip_address`, as for an event emitted through `POST /api/v1/events`.
 * Events the platform raises by itself (a task, a retention job, a scheduled backup) have none.
 */
export interface EventOrigin {
  requestId: string;
  correlationId?: string | undefined;
  userAgent: string;
  ipAddress: string;
  /** The request's W3C `traceparent` and `tracestate` headers, as sent (checked where an event is emitted). */
  traceparent?: string | undefined;
  tracestate?: string | undefined;
  /** The Idempotency-Key the event is emitted under (`idempotencyRef`), stored in the event's transaction. */
  idempotencyRef?: string | undefined;
}

/**
 * The origin of an event caused by `request`: its id, `X-Correlation-ID` (as `POST /api/v1/events` reads it),
 * user agent and client address (`request.ip`, which honours `server.trusted_proxies`). Built from fields
 * Fastify already holds, so it costs nothing on requests that announce no event.
 */
export function requestOrigin(request: Pick<FastifyRequest, 'id' | 'ip' | 'headers'>): EventOrigin {
  const correlation = request.headers['x-correlation-id'];
  const { traceparent, tracestate } = request.headers;
  return {
    requestId: request.id,
    correlationId:
      typeof correlation === 'string' && correlation ? storableText(correlation.slice(0, 128)) : undefined,
    userAgent: storableText(String(request.headers['user-agent'] ?? '').slice(0, 512)),
    ipAddress: request.ip,
    traceparent: typeof traceparent === 'string' ? traceparent : undefined,
    tracestate: typeof tracestate === 'string' ? tracestate : undefined,
  };
}

/** Who caused a platform event and, when a request did, which one (`origin`). */
export interface AnnounceContext {
  actor?: { id: string; username: string } | undefined;
  /** The request id alone; superseded by `origin`, which carries it too. */
  requestId?: string | undefined;
  origin?: EventOrigin | undefined;
}

/**
 * Internal events, one typed map: emitting an unknown name or a wrong payload does not compile.
 * The event system turns these into stored platform events (decisions §4, "events the platform emits itself").
 */
export interface PlatformEventMap {
  'platform.event': {
    type: string;
    source: string;
    data: Record<string, unknown>;
    actor?: { id: string; username: string } | undefined;
    requestId?: string | undefined;
    /** The request that caused the event; absent for events the platform raises by itself. */
    origin?: EventOrigin | undefined;
    /** Set by `announceStored`: the recorder hands it the storing of the event (which never rejects). */
    onStored?: ((stored: Promise<void>) => void) | undefined;
  };
}

type Listener<K extends keyof PlatformEventMap> = (payload: PlatformEventMap[K]) => void;

export class PlatformEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  emit<K extends keyof PlatformEventMap>(name: K, payload: PlatformEventMap[K]): void {
    this.emitter.emit(name, payload);
  }

  on<K extends keyof PlatformEventMap>(name: K, listener: Listener<K>): () => void {
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }

  /**
   * Shorthand for the platform's own events: `system.config.updated`, `auth.login`, … A call made while
   * serving a request passes `origin: requestOrigin(request)`.
   */
  announce(
    type: string,
    source: 'system' | 'auth' | `plugin:${string}`,
    data: Record<string, unknown>,
    context: AnnounceContext = {},
  ): void {
    this.announceWith(type, source, data, context, undefined);
  }

  /**
   * `announce`, resolving once the event is stored (or its storing failed, which the recorder logs): for a
   * caller that must not show an outcome before the event that tells it can be read. Resolves at once where
   * nothing records platform events. Never rejects.
   */
  async announceStored(
    type: string,
    source: 'system' | 'auth' | `plugin:${string}`,
    data: Record<string, unknown>,
    context: AnnounceContext = {},
  ): Promise<void> {
    const stored: Promise<void>[] = [];
    this.announceWith(type, source, data, context, (p) => stored.push(p));
    await Promise.all(stored);
  }

  private announceWith(
    type: string,
    source: 'system' | 'auth' | `plugin:${string}`,
    data: Record<string, unknown>,
    context: AnnounceContext,
    onStored: ((stored: Promise<void>) => void) | undefined,
  ): void {
    this.emit('platform.event', {
      type,
      source,
      data,
      actor: context.actor,
      requestId: context.origin?.requestId ?? context.requestId,
      origin: context.origin,
      ...(onStored ? { onStored } : {}),
    });
  }
}
