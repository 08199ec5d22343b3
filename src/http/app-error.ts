import { type ErrorCode, errorCatalogue } from './error-catalogue.js';

/**
 * A coded domain error. Domain code throws these; only the HTTP layer turns them into responses.
 * `status` overrides the catalogue's status where the contract allows two (VALIDATION_ERROR: 400 or 422).
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;
  readonly retryAfter: number | undefined;

  constructor(
    code: ErrorCode,
    message?: string,
    options: {
      details?: Record<string, unknown>;
      status?: number;
      headers?: Record<string, string>;
      retryAfter?: number;
    } = {},
  ) {
    super(message ?? errorCatalogue[code].message);
    this.name = 'AppError';
    this.code = code;
    this.details = options.details;
    this.status = options.status ?? errorCatalogue[code].status;
    this.headers = options.headers;
    this.retryAfter = options.retryAfter;
  }
}

export const notFound = (what: string, id: string): AppError =>
  new AppError('RESOURCE_NOT_FOUND', `${what} '${id}' does not exist`, { details: { resource: what, id } });
