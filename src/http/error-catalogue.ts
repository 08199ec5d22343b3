/**
 * Every error the platform can answer with, declared once: code, HTTP status and default message.
 * `docs/errors.md` documents the same list; a test keeps the two in step.
 */
export const errorCatalogue = {
  VALIDATION_ERROR: { status: 422, message: 'Input validation failed' },
  AUTHENTICATION_FAILED: { status: 401, message: 'Authentication is missing or invalid' },
  AUTHORIZATION_DENIED: { status: 403, message: 'Insufficient permissions' },
  RESOURCE_NOT_FOUND: { status: 404, message: 'The requested resource does not exist' },
  RESOURCE_CONFLICT: { status: 409, message: 'The resource conflicts with an existing one' },
  RATE_LIMIT_EXCEEDED: { status: 429, message: 'Too many requests' },
  INTERNAL_ERROR: { status: 500, message: 'An internal error occurred' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'A backing service is unavailable; retry shortly' },
  ADMIN_REQUIRED: { status: 403, message: 'Administrator privileges are required' },
  INSUFFICIENT_ADMIN_PERMISSIONS: {
    status: 403,
    message: 'The administrator credential lacks the needed scope',
  },
  SYSTEM_LOCKED: { status: 423, message: 'The system is locked for maintenance' },
  BACKUP_IN_PROGRESS: { status: 409, message: 'A backup or restore is already running' },
  BACKUP_INVALID: { status: 422, message: 'The backup archive failed verification' },
  BACKUP_KEY_REQUIRED: { status: 422, message: 'Backup encryption needs backups.encryption_key to be set' },
  PLUGIN_DEPENDENCY_ERROR: { status: 409, message: 'Plugin dependencies are not satisfied' },
  PLUGIN_PACKAGE_INVALID: { status: 422, message: 'The plugin package was refused' },
  CONFIG_VALIDATION_ERROR: { status: 400, message: 'Configuration validation failed' },
  EVENT_NOT_FOUND: { status: 404, message: 'The event does not exist' },
  INVALID_EVENT_TYPE: { status: 400, message: 'The event type format is invalid' },
  EVENT_TYPE_NOT_REGISTERED: {
    status: 422,
    message: 'The event type is not in the event catalogue, which is strict',
  },
  EVENT_TOO_LARGE: { status: 413, message: 'The event payload exceeds the size limit' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body exceeds the size limit' },
  SUBSCRIPTION_NOT_FOUND: { status: 404, message: 'The subscription does not exist' },
  SUBSCRIPTION_LIMIT_EXCEEDED: { status: 429, message: 'Too many subscriptions' },
  SUBSCRIPTION_NOT_ACTIVE: { status: 409, message: 'The subscription is paused or in error' },
  DELIVERY_NOT_FOUND: { status: 404, message: 'The delivery does not exist' },
  WEBHOOK_DELIVERY_FAILED: { status: 502, message: 'Webhook delivery failed' },
  EVENT_EXPIRED: { status: 410, message: 'The event has expired' },
  INSUFFICIENT_EVENT_PERMISSIONS: {
    status: 403,
    message: 'Insufficient permissions for this event operation',
  },
  METHOD_NOT_ALLOWED: { status: 405, message: 'The method is not allowed on this resource' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request content type is not supported' },
  IDEMPOTENCY_KEY_REUSED: {
    status: 409,
    message: 'The Idempotency-Key was already used for a different request',
  },
  IDEMPOTENCY_KEY_IN_PROGRESS: {
    status: 409,
    message: 'A request with this Idempotency-Key is still being processed',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

export const errorCodes = Object.keys(errorCatalogue) as ErrorCode[];
