import { performance } from 'node:perf_hooks';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';
import { extend } from '../kernel/extend.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { EventOrigin } from '../kernel/platform-events.js';
import { isUnstorableText } from '../kernel/storable-text.js';
import type { KeyToRecord } from '../storage/idempotency-store.js';
import { beginEmitTrace } from '../tracing/emit-trace.js';
import { offTracing, type Tracing } from '../tracing/tracing.js';
import type { EventBus } from './event-bus.js';
import type { EventCatalogue } from './event-catalogue.js';
import type { EventCipher } from './event-cipher.js';
import { type EventReader, isPlatformSource, isPlatformType, mayRead } from './event-data.js';
import type { EventQuery, EventStore } from './event-store.js';
import type { EventsTable } from './event-tables.js';
import { isValidEventType } from './event-type.js';
import { eventDetail, eventListItem } from './event-views.js';
import { assertNesting, cutText } from './input-shape.js';
import { isValidPattern } from './pattern-matcher.js';
import type { SubscriptionIndex } from './subscription-index.js';

export type SecurityLevel = 'public' | 'internal' | 'confidential';

export interface EmitInput {
  event_type?: string | undefined;
  /** The alias of `event_type` in the short emission form (§4.4). */
  type?: string | undefined;
  source?: string | undefined;
  data?: Record<string, unknown> | undefined;
  metadata?: Record<string, unknown> | undefined;
  priority?: number | undefined;
  expires_at?: string | undefined;
  security_level?: SecurityLevel | undefined;
}

/** Who emits and from where; the server's part of `metadata`. */
/** Where an emit came from: the request (or the platform's own caller) and, for an emit over the API, who. */
export interface EmitOrigin extends EventOrigin {
  emitter: { userId: string; username: string } | undefined;
  /**
   * Set only by the platform recording its own events (`recordPlatformEvents`): they alone may use the
   * platform's types (`auth.*`, `security.*`, … see PLATFORM_EVENT_FAMILIES) and sources.
   */
  platform?: true | undefined;
  /**
   * The request's Idempotency-Key, to be claimed in the event's own batch (src/http/idempotency.ts,
   * `recordedKey`): the emit is refused with IdempotencyKeyTaken if another request holds it.
   */
  idempotencyKey?: KeyToRecord | undefined;
}

/** Who reads: see `mayRead` (event-data.ts), the one rule of every read. */
export type Reader = EventReader;

/** Counts live stream clients an event would reach (the stream hub). */
export type LiveAudience = (
  event: Pick<EventsTable, 'event_type' | 'source' | 'priority' | 'security_level' | 'emitter_id'>,
  data: () => unknown,
) => number;

/** Emitting, reading and querying events. */
export class EventService {
  private liveAudience: LiveAudience = () => 0;

  constructor(
    private readonly deps: {
      config: () => PlatformConfig;
      bus: EventBus;
      store: EventStore;
      subscriptions: SubscriptionIndex;
      cipher: EventCipher;
      catalogue: EventCatalogue;
      /** Trace context of emits (docs/tracing.md); off when absent. */
      tracing?: Tracing;
    },
  ) {}

  /** The stream hub registers here, so `subscriber_count` includes live clients. */
  setLiveAudience(audience: LiveAudience): void {
    this.liveAudience = audience;
  }

  /**
   * Validates and stores an event with its outbox rows in one transaction; resolves after the commit.
   * @throws AppError INVALID_EVENT_TYPE, EVENT_TOO_LARGE, EVENT_EXPIRED, VALIDATION_ERROR (also `data` against
   *   its type's schema in the catalogue), EVENT_TYPE_NOT_REGISTERED (strict catalogue)
   */
  async emit(input: EmitInput, origin: EmitOrigin): Promise<EventsTable> {
    const startedAt = performance.now();
    const eventType = input.event_type ?? input.type;
    // The field the caller used: `type` in the short form.
    const typeField = input.event_type === undefined ? 'type' : 'event_type';
    if (eventType === undefined) {
      throw new AppError('VALIDATION_ERROR', 'event_type is required', {
        details: { field: 'event_type', reason: 'is required' },
      });
    }
    if (!isValidEventType(eventType)) {
      throw new AppError(
        'INVALID_EVENT_TYPE',
        'An event type is 1–10 dot-separated segments of letters, digits, _ and -, at most 255 characters',
        { details: { field: typeField, value: cutText(eventType, 300) } },
      );
    }
    if (!origin.platform) assertNotPlatformOwn(input, eventType, typeField, origin);
    const priority = input.priority ?? 5;
    // The API's schema says the same; the platform's own callers (plugins) reach here unchecked.
    if (!Number.isInteger(priority) || priority < 1 || priority > 10) {
      throw new AppError(
        'VALIDATION_ERROR',
        `priority must be an integer from 1 to 10, not ${String(priority)}`,
        {
          details: { field: 'priority', reason: 'must be an integer from 1 to 10', value: priority },
        },
      );
    }
    const data = input.data ?? {};
    assertNesting('data', data);
    assertNesting('metadata', input.metadata);
    const dataText = JSON.stringify(data);
    const max = this.deps.config().events.max_payload_bytes;
    const size = Buffer.byteLength(dataText, 'utf8');
    if (size > max) {
      throw new AppError('EVENT_TOO_LARGE', `The event data is ${size} bytes; the limit is ${max}`, {
        details: { field: 'data', size_bytes: size, max_bytes: max },
      });
    }
    // The platform's own types are never in the catalogue, and never refused for it.
    if (!origin.platform) this.deps.catalogue.check(eventType, data, typeField);
    let expiresAt: string | null = null;
    if (input.expires_at !== undefined) {
      const at = Date.parse(input.expires_at);
      if (Number.isNaN(at)) {
        throw new AppError('VALIDATION_ERROR', 'expires_at must be an ISO 8601 timestamp', {
          details: { field: 'expires_at', reason: 'must be an ISO 8601 timestamp' },
        });
      }
      if (at <= Date.now()) {
        throw new AppError('EVENT_EXPIRED', 'expires_at is in the past', {
          details: { field: 'expires_at', expires_at: input.expires_at },
        });
      }
      expiresAt = new Date(at).toISOString();
    }
    const securityLevel = input.security_level ?? 'internal';
    const confidential = securityLevel === 'confidential';
    const supplied = input.metadata ?? {};
    const correlation = suppliedCorrelation(supplied['correlation_id']);
    const metadata = extend(supplied, {
      correlation_id: correlation ?? origin.correlationId ?? origin.requestId,
      request_id: origin.requestId,
      user_agent: origin.userAgent,
      ip_address: origin.ipAddress,
    });
    assertStorable('source', input.source);
    assertStorable('metadata.correlation_id', metadata.correlation_id);
    const facts = {
      event_type: eventType,
      source: input.source ?? 'api',
      priority,
      security_level: securityLevel,
      emitter_id: origin.emitter?.userId ?? null,
    };
    const subscriptionIds = this.deps.subscriptions.match(facts, () => data);
    const live = this.liveAudience(facts, () => data);
    const eventId = newId('evt');
    const trace = beginEmitTrace(this.deps.tracing ?? offTracing, origin, {
      event_id: eventId,
      event_type: facts.event_type,
      source: facts.source,
    });
    const written = this.deps.bus.write({
      row: {
        event_type: facts.event_type,
        source: facts.source,
        priority: facts.priority,
        security_level: facts.security_level,
        emitter_id: facts.emitter_id,
        event_id: eventId,
        timestamp: nowIso(),
        status: 'emitted',
        data: confidential ? this.deps.cipher.seal(dataText) : dataText,
        data_encrypted: confidential ? 1 : 0,
        metadata: JSON.stringify(metadata),
        correlation_id: metadata.correlation_id,
        expires_at: expiresAt,
        subscriber_count: subscriptionIds.length + live,
        emitted_by: origin.emitter?.username ?? facts.source,
        durable_subscribers: subscriptionIds.length,
        traceparent: trace.traceparent,
        tracestate: trace.tracestate,
        idempotency_ref: origin.idempotencyRef ?? null,
      },
      subscriptionIds,
      startedAt,
      key: origin.idempotencyKey,
    });
    return trace.follow(written);
  }

  /** The event emitted under an Idempotency-Key (`idempotencyRef`) since `since`, if one was committed. */
  async emittedUnder(ref: string, since: string): Promise<EventsTable | undefined> {
    return this.deps.store.findByIdempotencyRef(ref, since);
  }

  /** The stored event `eventId`, whoever may read it (the answer of a repeated keyed emit is built from it). */
  async stored(eventId: string): Promise<EventsTable | undefined> {
    return this.deps.store.findById(eventId);
  }

  /** @throws AppError EVENT_NOT_FOUND (also for confidential events the reader may not see), EVENT_EXPIRED */
  async get(eventId: string, reader: Reader) {
    const row = await this.readable(eventId, reader);
    // A reader who is not an admin sees only the deliveries of their own subscriptions (decisions §2).
    const owner = reader.isAdmin ? undefined : reader.userId;
    return eventDetail(row, this.deps.cipher, await this.deps.store.deliveries(row.event_id, owner));
  }

  async auditTrail(eventId: string, reader: Reader) {
    const row = await this.readable(eventId, reader, { allowExpired: true });
    const stored = (await this.deps.store.auditTrail(row.event_id)).map((e) => ({
      timestamp: e.timestamp,
      action: e.action,
      actor: e.actor,
      details: e.details,
    }));
    const emitted = emittedEntry(row);
    return emitted ? [emitted, ...stored] : stored;
  }

  async list(query: Omit<EventQuery, 'now' | 'reader'>, reader: Reader) {
    if (query.eventType !== undefined && !isValidPatternOrType(query.eventType)) {
      throw new AppError('INVALID_EVENT_TYPE', 'event_type must be an event type or a pattern', {
        details: { field: 'event_type', value: cutText(query.eventType, 300) },
      });
    }
    if (query.startTime !== undefined && query.endTime !== undefined && query.startTime > query.endTime) {
      throw new AppError('VALIDATION_ERROR', 'start_time must not be after end_time', {
        details: { field: 'start_time', reason: 'is after end_time' },
      });
    }
    const { rows, total, totalExact } = await this.deps.store.query({ ...query, now: nowIso(), reader });
    return { items: rows.map((r) => eventListItem(r, this.deps.cipher)), total, totalExact };
  }

  /** The sequence of an event a stream resumes after. @throws AppError EVENT_NOT_FOUND */
  async resumePoint(eventId: string, reader: Reader): Promise<{ sequence: number; eventId: string }> {
    const row = await this.deps.store.findById(eventId);
    if (!row || !mayRead(row, reader)) throw eventNotFound(eventId);
    return { sequence: Number(row.sequence), eventId: row.event_id };
  }

  private async readable(eventId: string, reader: Reader, options: { allowExpired?: boolean } = {}) {
    const row = await this.deps.store.findById(eventId);
    if (!row || !mayRead(row, reader)) throw eventNotFound(eventId);
    if (!options.allowExpired && row.expires_at !== null && row.expires_at <= nowIso()) {
      throw new AppError('EVENT_EXPIRED', `Event '${eventId}' expired at ${row.expires_at}`, {
        details: { event_id: eventId, expires_at: row.expires_at },
      });
    }
    return row;
  }
}

/** The `event_emitted` audit entry, read from the event row (null for rows older than migration 0011). */
function emittedEntry(row: EventsTable) {
  if (row.emitted_by === null || row.durable_subscribers === null) return null;
  const durable = Number(row.durable_subscribers);
  return {
    timestamp: row.timestamp,
    action: 'event_emitted',
    actor: row.emitted_by,
    details: {
      source: row.source,
      priority: row.priority,
      security_level: row.security_level,
      durable_subscribers: durable,
      live_subscribers: row.subscriber_count - durable,
      request_id: (JSON.parse(row.metadata) as { request_id?: string }).request_id ?? null,
      sequence: Number(row.sequence),
    },
  };
}

/**
 * Refuses, on its own, an emit whose text fields would make its batch's statement fail: the emits written with
 * it must not be refused for it.
 */
function assertStorable(field: string, value: string | undefined): void {
  if (value === undefined || !isUnstorableText(value)) return;
  throw new AppError('VALIDATION_ERROR', `${field} holds characters that cannot be stored (such as NUL)`, {
    status: 400,
    details: { field, reason: 'unsupported characters' },
  });
}

/**
 * The platform's types and sources are its own: nobody else emits them, so a `security.alert` or an event from
 * `auth` is always the platform's. Users over the API choose their `source`; a plugin's is set to
 * `plugin:<id>` by its capability (it has no emitter), so only a user's source is checked.
 * @throws AppError VALIDATION_ERROR (422) naming the field
 */
function assertNotPlatformOwn(
  input: EmitInput,
  eventType: string,
  typeField: string,
  origin: EmitOrigin,
): void {
  if (isPlatformType(eventType)) {
    throw new AppError(
      'VALIDATION_ERROR',
      `The event type '${eventType}' is reserved for the platform's own events`,
      {
        details: { field: typeField, reason: 'reserved for the platform', value: cutText(eventType, 300) },
      },
    );
  }
  if (origin.emitter !== undefined && input.source !== undefined && isPlatformSource(input.source)) {
    throw new AppError(
      'VALIDATION_ERROR',
      `The source '${input.source}' is reserved for the platform's own events`,
      {
        details: { field: 'source', reason: 'reserved for the platform', value: cutText(input.source, 300) },
      },
    );
  }
}

/** Stored in an indexed column, where PostgreSQL refuses an entry over about 2.7 KB. */
const MAX_CORRELATION_ID = 255;

/**
 * The caller's `metadata.correlation_id`: text, or a number as its text (as the other fields are read); absent or
 * empty means the server's own. @throws AppError VALIDATION_ERROR for any other value or one over 255 characters
 */
function suppliedCorrelation(value: unknown): string | undefined {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (text === undefined || text === null || text === '') return undefined;
  if (typeof text !== 'string') {
    throw new AppError('VALIDATION_ERROR', 'metadata.correlation_id must be a string', {
      details: { field: 'metadata.correlation_id', reason: 'must be string' },
    });
  }
  if (text.length > MAX_CORRELATION_ID) {
    throw new AppError(
      'VALIDATION_ERROR',
      `metadata.correlation_id must NOT have more than ${MAX_CORRELATION_ID} characters`,
      {
        details: {
          field: 'metadata.correlation_id',
          reason: `must NOT have more than ${MAX_CORRELATION_ID} characters`,
        },
      },
    );
  }
  return text;
}

const eventNotFound = (eventId: string) =>
  new AppError('EVENT_NOT_FOUND', `Event '${eventId}' does not exist`, { details: { event_id: eventId } });

const isValidPatternOrType = (value: string): boolean =>
  value.includes('*') ? isValidPattern(value) : isValidEventType(value);
