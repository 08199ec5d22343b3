import type { FastifyRequest } from 'fastify';

/**
 * The `preValidation` hook of a route whose body may be left out: none (or an empty one, with or without a
 * JSON content type) is validated as `{}`, so the schema's defaults apply. The OpenAPI document marks such a
 * body not required (http/openapi.ts).
 */
export async function optionalBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {};
}
