import type { FastifyServerOptions } from 'fastify';

/** Headers and fields that must never reach a log line. */
const REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.new_password',
  '*.current_password',
  '*.refresh_token',
  '*.access_token',
  '*.secret',
  '*.token',
];

/** Removes credentials that clients may put in a query string (`?token=` on streams). */
export function scrubUrl(url: string): string {
  return url.replace(/([?&](?:token|api_key|access_token)=)[^&]*/gi, '$1[REDACTED]');
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACT, censor: '[REDACTED]' },
    serializers: {
      req: (req: { method: string; url: string; ip?: string; id?: string }) => ({
        method: req.method,
        url: scrubUrl(req.url),
        remoteAddress: req.ip,
      }),
    },
  };
}
