import type { Principal } from '../auth/principal.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { validateTree } from '../config/config-tree.js';
import type { Access } from './access.js';
import { AppError } from './app-error.js';
import type { ErrorEnvelopeBody } from './envelope.js';
import { type ErrorCode, errorCatalogue, errorCodes } from './error-catalogue.js';
import { errorBody } from './error-handler.js';
import { enforceAccess } from './request-gates.js';

/** What an operation's generic error examples depend on. */
export interface ErrorExampleTraits {
  rule: Access | undefined;
  /** Login, refresh, logout: counted in the per-IP authentication bucket. */
  authBucket: boolean;
  /** Names of the operation's path parameters (a 404 names the resource they address). */
  pathParams: string[];
}

// Fixed, so that generating the document twice gives the same text.
const TIMESTAMP = '2026-11-21T20:42:26.123Z';
const REQUEST_ID = 'req_01jd8x2k4v6b1c2d3e4f5g6h7j';
// Worked out when the document is first built, not at start-up.
let defaultLimits: PlatformConfig['rate_limits'] | undefined;
const limitsOf = () => (defaultLimits ??= validateTree({}).config!.rate_limits);

function envelope(
  code: ErrorCode,
  message?: string,
  extra: { details?: Record<string, unknown>; retryAfter?: number } = {},
): ErrorEnvelopeBody {
  return errorBody(new AppError(code, message, extra), REQUEST_ID, TIMESTAMP);
}

// A signed-in caller holding no permission: what the request gates refuse it is the route's 403.
const NOBODY: Principal = {
  userId: 'usr_01jd8x2k4v6b1c2d3e4f5g6h7j',
  username: 'someone',
  roles: [],
  permissions: [],
  isAdmin: false,
  method: 'jwt',
};

/** What the request gates (enforceAccess) answer `principal` for the rule, or undefined when they let it in. */
function refusal(rule: Access, principal: Principal | undefined): ErrorEnvelopeBody | undefined {
  try {
    enforceAccess(rule, principal);
    return undefined;
  } catch (err) {
    return errorBody(err as AppError, REQUEST_ID, TIMESTAMP);
  }
}

function forbidden(rule: Access | undefined): ErrorEnvelopeBody {
  return (
    (rule && refusal(rule, NOBODY)) ??
    // Public and any-caller routes are refused only for a blocked client address.
    envelope('AUTHORIZATION_DENIED', 'Requests from this address are blocked', {
      details: { reason: 'ip_blocked' },
    })
  );
}

function notFound(pathParams: string[]): ErrorEnvelopeBody {
  if (pathParams.includes('event_id')) return envelope('EVENT_NOT_FOUND');
  if (pathParams.includes('delivery_id')) return envelope('DELIVERY_NOT_FOUND');
  if (pathParams.includes('subscription_id') || pathParams.includes('webhook_id'))
    return envelope('SUBSCRIPTION_NOT_FOUND');
  return envelope('RESOURCE_NOT_FOUND');
}

function rateLimited(t: ErrorExampleTraits): ErrorEnvelopeBody {
  // The default limits of the configuration for the bucket the operation is counted in.
  const bucket = t.authBucket ? 'auth' : t.rule?.kind === 'public' ? 'anonymous' : 'authenticated';
  const { max: limit, window_seconds: window } = limitsOf()[bucket];
  return envelope('RATE_LIMIT_EXCEEDED', `Rate limit of ${limit} requests per ${window} s exceeded`, {
    details: { bucket, limit, window_seconds: window },
    retryAfter: 1260,
  });
}

/**
 * A representative error envelope for an error status of an operation, with a catalogued code that the status
 * really carries and the message and details the platform sends with it. Examples captured from the running
 * platform (openapi-examples.json) take precedence; this covers the statuses that cannot be provoked on
 * purpose (500, 503) or that every operation answers the same way (401, 413, 423, 429).
 */
export function errorExample(status: number, t: ErrorExampleTraits): ErrorEnvelopeBody | undefined {
  switch (status) {
    case 400:
      return envelope('VALIDATION_ERROR', 'The request body is not valid JSON', {
        details: { field: 'body', reason: 'malformed JSON' },
      });
    case 401:
      return refusal({ kind: 'authenticated' }, undefined);
    case 403:
      return forbidden(t.rule);
    case 404:
      return notFound(t.pathParams);
    case 413:
      return envelope('PAYLOAD_TOO_LARGE', undefined, { details: { field: 'body', reason: 'too large' } });
    case 422:
      return envelope('VALIDATION_ERROR', 'Invalid body: body is invalid', {
        details: { field: 'body', reason: 'is invalid', errors: [{ field: 'body', reason: 'is invalid' }] },
      });
    case 423:
      return envelope('SYSTEM_LOCKED', 'Database upgrade in progress', {
        details: {
          message: 'Database upgrade in progress',
          estimated_end: '2026-11-21T21:12:26.123Z',
          estimated_duration_minutes: 30,
        },
      });
    case 429:
      return rateLimited(t);
    case 500:
      return envelope('INTERNAL_ERROR', `An internal error occurred (request ${REQUEST_ID})`);
    default: {
      // 409, 410, 415, 503 and anything else: the first catalogued code of that status.
      const code = errorCodes.find((c) => errorCatalogue[c].status === status);
      return code ? envelope(code) : undefined;
    }
  }
}
