import type { FastifyServerOptions } from 'fastify';
import type { LogOutput } from './log-output.js';

/**
 * Fields that must never reach a log line, on stdout or in the log store (redaction happens when pino
 * serializes, before either output sees the line). Listed at the top level and one level down, since pino's
 * `*.password` does not match a top-level `password`.
 */
const SECRET_FIELDS = [
  'password',
  'new_password',
  'current_password',
  'temporary_password',
  'refresh_token',
  'access_token',
  'secret',
  'token',
  'api_key',
  'authorization',
];
const REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
];

/** Query parameter names whose values are credentials (`token`, `api_key`, `password`, `client_secret`, …). */
const SECRET_PARAM = /pass(?:word|wd)|secret|token|api[_-]?key|authorization|credential/i;

/**
 * Removes credentials that clients may put in a query string (`?token=` on streams, or a password sent in
 * the wrong place). Names are compared decoded, so `%70assword=` is caught as well.
 */
export function scrubUrl(url: string): string {
  return url.replace(/([?&;])([^=&;#]*)=([^&;#]*)/g, (pair, sep: string, name: string) =>
    SECRET_PARAM.test(decodeName(name)) ? `${sep}${name}=[REDACTED]` : pair,
  );
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/**
 * The platform logger's options. With a LogOutput, lines go through it (stdout at `logging.level`, the log
 * store at INFO and above); without one, pino writes to stdout at `level`.
 */
export function loggerOptions(level: string, output?: LogOutput): FastifyServerOptions['logger'] {
  return {
    level: output ? output.loggerLevel : level,
    ...(output ? { stream: output } : {}),
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
