import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { nowIso } from '../kernel/new-id.js';

/**
 * The success envelope of spec §2.1 around `data`. Two literals rather than a conditional spread: properties
 * after a spread are slow to add on Node 20 (see kernel/extend.ts), and this runs on every request.
 */
export function ok<T>(
  request: FastifyRequest,
  data: T,
  message?: string,
): { success: true; data: T; message?: string; timestamp: string; request_id: string } {
  return message === undefined
    ? { success: true, data, timestamp: nowIso(), request_id: request.id }
    : { success: true, data, message, timestamp: nowIso(), request_id: request.id };
}

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-21T20:42:26.123Z'] });

export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({
    success: Type.Literal(true),
    data,
    message: Type.Optional(Type.String()),
    timestamp: Timestamp,
    request_id: Type.String(),
  });

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String({ examples: ['VALIDATION_ERROR'] }),
      message: Type.String(),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      retry_after: Type.Optional(Type.Integer()),
    }),
    timestamp: Timestamp,
    request_id: Type.String(),
  },
  { $id: 'ErrorEnvelope', title: 'Error envelope' },
);
export type ErrorEnvelopeBody = Static<typeof ErrorEnvelope>;

export const Pagination = Type.Object({
  page: Type.Integer({ minimum: 1 }),
  per_page: Type.Integer({ minimum: 1 }),
  total: Type.Integer({ minimum: 0 }),
  pages: Type.Integer({ minimum: 0 }),
  has_next: Type.Boolean(),
  has_prev: Type.Boolean(),
});

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
};

export function pagination(page: number, perPage: number, total: number) {
  const pages = Math.ceil(total / perPage);
  return { page, per_page: perPage, total, pages, has_next: page < pages, has_prev: page > 1 };
}

export const MessageOnly = Type.Object({
  success: Type.Literal(true),
  message: Type.String(),
  timestamp: Timestamp,
  request_id: Type.String(),
});

/** The envelope of an operation that answers with a message and no data (delete, logout). */
export function done(request: FastifyRequest, message: string) {
  return { success: true as const, message, timestamp: nowIso(), request_id: request.id };
}
