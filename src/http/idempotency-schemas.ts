import { Type } from '@sinclair/typebox';
import type { FastifySchema } from 'fastify';

/** 1–255 printable ASCII characters (space included), as the IETF draft and Stripe take it. */
export const IdempotencyKeyHeader = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x20-\\x7E]+$',
  description:
    'Makes the request safe to retry: a repeat with the same key and the same input (per user, for ' +
    '`server.idempotency_ttl_seconds`, 24 hours by default) answers the first answer again, with ' +
    '`Idempotent-Replayed: true`, instead of creating a second resource. The same key with a different input ' +
    'is refused with 409 IDEMPOTENCY_KEY_REUSED; while the first request still runs, a repeat waits for its ' +
    'answer up to 5 s, then gets 409 IDEMPOTENCY_KEY_IN_PROGRESS. Only 2xx answers are kept: after an error ' +
    'the key is free again.',
  examples: ['order-4711-create'],
});

const REPLAYED = {
  type: 'string',
  enum: ['true'],
  description: 'Present on an answer replayed for a repeated Idempotency-Key: the first answer, unchanged.',
};

const ERROR = { $ref: 'ErrorEnvelope#' };

/**
 * The schema of an idempotent route, completed: the `Idempotency-Key` header among its headers, the replay
 * header on its success answers, and the 409 among its errors. The route's own schema objects, often shared
 * with other routes, are copied rather than changed.
 */
export function withIdempotencyHeaders(schema: FastifySchema): FastifySchema {
  const headers = (schema.headers ?? {}) as { properties?: Record<string, unknown> };
  const response: Record<string, unknown> = { ...((schema.response as Record<string, unknown>) ?? {}) };
  for (const [code, answer] of Object.entries(response)) {
    if (!code.startsWith('2') || typeof answer !== 'object' || answer === null) continue;
    const declared = (answer as { headers?: Record<string, unknown> }).headers ?? {};
    response[code] = { ...answer, headers: { ...declared, 'Idempotent-Replayed': REPLAYED } };
  }
  response['409'] ??= ERROR;
  return {
    ...schema,
    headers: {
      ...Type.Object({}),
      ...headers,
      // Lower case: the validator (a custom compiler, http/lazy-schema-compilers.ts) sees the request's headers
      // as Node gives them, and Fastify lowers a schema's header names only for its own compiler.
      properties: { ...(headers.properties ?? {}), 'idempotency-key': IdempotencyKeyHeader },
    },
    response,
  };
}
