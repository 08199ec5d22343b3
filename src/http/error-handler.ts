import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { nowIso } from '../kernel/new-id.js';
import { isConflictAbort } from '../storage/retry-on-conflict.js';
import { AppError } from './app-error.js';
import type { App } from './app-type.js';
import { type ValidationIssue, withEnumsCollapsed } from './enum-issues.js';
import type { ErrorEnvelopeBody } from './envelope.js';
import type { ErrorCode } from './error-catalogue.js';
import { errorCatalogue } from './error-catalogue.js';

/** `/body/name` + missingProperty `x` → `name.x`; which part of the request prefixes it (body, query, params). */
function fieldOf(issue: ValidationIssue, context: string | undefined): string {
  const path = (issue.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
  const missing = issue.params?.['missingProperty'];
  const extra = issue.params?.['additionalProperty'];
  const leaf = typeof missing === 'string' ? missing : typeof extra === 'string' ? extra : '';
  const joined = [path, leaf].filter(Boolean).join('.');
  return joined || context || 'body';
}

function reasonOf(issue: ValidationIssue): string {
  if (issue.keyword === 'additionalProperties') return 'unknown field';
  if (issue.keyword === 'required') return 'is required';
  return issue.message ?? 'is invalid';
}

export function sendError(reply: FastifyReply, request: FastifyRequest, error: AppError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter));
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(errorBody(error, request.id, nowIso()));
}

/** The error envelope of an AppError (also what the OpenAPI document's error examples show). */
export function errorBody(error: AppError, requestId: string, timestamp: string): ErrorEnvelopeBody {
  // Assigned rather than spread in: properties added after a spread are slow on Node 20 (kernel/extend.ts).
  const body: ErrorEnvelopeBody['error'] = { code: error.code, message: error.message };
  if (error.details) body.details = withErrorList(error);
  if (error.retryAfter !== undefined) body.retry_after = error.retryAfter;
  return { success: false, error: body, timestamp, request_id: requestId };
}

/**
 * Validation errors always carry `field`, `reason` and `errors` (decisions §1); one raised by the platform's
 * own checks names a single field, which is then the whole list.
 */
function withErrorList(error: AppError): Record<string, unknown> {
  const details = error.details!;
  if (error.code !== 'VALIDATION_ERROR' || details['errors'] !== undefined) return details;
  const { field, reason } = details;
  if (typeof field !== 'string' || typeof reason !== 'string') return details;
  return { ...details, errors: [{ field, reason }] };
}

const sentAsJson = (request: FastifyRequest) => {
  const type = request.headers['content-type'];
  return typeof type === 'string' && /^application\/(?:[\w.+-]+\+)?json\b/i.test(type);
};

/** Turns any thrown error into the envelope with a catalogued code. Unknown errors are logged, never shown. */
export function toAppError(error: unknown, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  const fe = error as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (fe.validation && fe.validationContext === 'body') {
    // No body, or one a non-JSON parser (text/plain) read as a string: decisions §1 make both a 400.
    const body: unknown = request.body;
    if (body === undefined) {
      return new AppError('VALIDATION_ERROR', 'A JSON request body is required', {
        status: 400,
        details: { field: 'body', reason: 'is required' },
      });
    }
    // A JSON string (`"x"`) is JSON all the same: the schema's "must be object" below says what is wrong.
    if ((typeof body === 'string' && !sentAsJson(request)) || Buffer.isBuffer(body)) {
      return new AppError('VALIDATION_ERROR', 'The request body must be sent as application/json', {
        status: 400,
        details: { field: 'content-type', reason: 'unsupported content type' },
      });
    }
  }
  if (fe.validation) {
    const errors = withEnumsCollapsed(fe.validation).map((i) => ({
      field: fieldOf(i, fe.validationContext),
      reason: reasonOf(i),
    }));
    const first = errors[0] ?? { field: 'body', reason: 'is invalid' };
    return new AppError(
      'VALIDATION_ERROR',
      `Invalid ${fe.validationContext ?? 'request'}: ${first.field} ${first.reason}`,
      {
        details: { field: first.field, reason: first.reason, errors },
      },
    );
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('VALIDATION_ERROR', 'The request body is not valid JSON', {
        status: 400,
        details: { field: 'body', reason: 'malformed JSON' },
      });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new AppError('VALIDATION_ERROR', 'The request body must be sent as application/json', {
        status: 400,
        details: { field: 'content-type', reason: 'unsupported content type' },
      });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', undefined, {
        details: { field: 'body', reason: 'too large' },
      });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // A path id longer than the router takes fails the path schema like any other bad id (decisions §1).
      return new AppError('VALIDATION_ERROR', 'A path parameter is too long', {
        details: { field: 'params', reason: 'too long' },
      });
    case 'FST_ERR_NOT_FOUND':
      return new AppError('RESOURCE_NOT_FOUND', 'No such route');
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    // Client errors raised by Fastify or its plugins that have no code of their own.
    const code: ErrorCode =
      fe.statusCode === 404
        ? 'RESOURCE_NOT_FOUND'
        : fe.statusCode === 413
          ? 'PAYLOAD_TOO_LARGE'
          : 'VALIDATION_ERROR';
    return new AppError(code, fe.statusCode === 404 ? undefined : 'The request could not be processed', {
      status: code === 'VALIDATION_ERROR' ? 400 : errorCatalogue[code].status,
      details: { reason: fe.code ?? 'bad_request' },
    });
  }
  if (isUnstorableText(error)) {
    return new AppError(
      'VALIDATION_ERROR',
      'The request holds characters that cannot be stored (such as NUL)',
      {
        status: 400,
        details: { field: 'body', reason: 'unsupported characters' },
      },
    );
  }
  if (isConflictAbort(error)) {
    // A retry succeeds, so the client is told to retry; but a conflict that reached a client is a lock-order
    // problem to fix (wrap the work in retryOnConflict), so it is logged as an error under its own name.
    request.log.error({ err: error }, 'transaction aborted by a conflict with another one');
    return new AppError('SERVICE_UNAVAILABLE', undefined, { headers: { 'retry-after': '5' } });
  }
  if (isStorageFailure(error)) {
    // The database refused to write (a full disk, an I/O error, a lock held past the busy timeout): the change
    // was rolled back whole, and the client may retry once the operator has made room.
    request.log.error({ err: error }, 'the database could not store a change');
    return new AppError('SERVICE_UNAVAILABLE', 'The database cannot store changes right now; retry shortly', {
      headers: { 'retry-after': '5' },
    });
  }
  if (isUnavailable(error)) {
    // An outage of a backing service, not a bug: one warning per request, and the client is told to retry.
    request.log.warn({ err: error }, 'backing service unavailable');
    return new AppError('SERVICE_UNAVAILABLE', undefined, { headers: { 'retry-after': '5' } });
  }
  request.log.error({ err: error }, 'unhandled error');
  return new AppError('INTERNAL_ERROR', `An internal error occurred (request ${request.id})`);
}

/** PostgreSQL refuses NUL and invalid characters in text, which SQLite stores: that is bad input, not a bug. */
function isUnstorableText(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === '22021' || code === '22P05';
}

/** SQLite's full disk, I/O, lock and read-only failures; PostgreSQL's "insufficient resources" class (53). */
function isStorageFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return (
    code === 'SQLITE_FULL' ||
    code === 'SQLITE_CANTOPEN' ||
    /^SQLITE_(IOERR|BUSY|READONLY)/.test(code) ||
    /^53[0-9A-Z]{3}$/.test(code)
  );
}

/** Connection failures to PostgreSQL or Redis answer 503 fast, so clients retry rather than report a bug. */
function isUnavailable(error: unknown): boolean {
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  return (
    (typeof code === 'string' &&
      [
        'ECONNREFUSED',
        'ECONNRESET',
        'ETIMEDOUT',
        '57P01',
        '57P02',
        '57P03',
        '08006',
        '08001',
        '08003',
      ].includes(code)) ||
    // ioredis gave up on a command while reconnecting; pg lost or could not open a connection (no code).
    name === 'MaxRetriesPerRequestError' ||
    (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => message.startsWith(m)))
  );
}

const UNAVAILABLE_MESSAGES = [
  'Connection is closed',
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
];

/**
 * Fastify's `frameworkErrors` option: errors the router raises before any route runs (a malformed URL, a path
 * parameter over the length limit) would otherwise be answered outside the envelope.
 */
export function frameworkErrors(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  sendError(reply, request, toAppError(error, request));
}

export function registerErrorHandling(app: App): void {
  app.setErrorHandler((error, request, reply) => sendError(reply, request, toAppError(error, request)));
  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      request,
      new AppError('RESOURCE_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`, {
        details: { method: request.method, path: request.url.split('?')[0] },
      }),
    ),
  );
}
