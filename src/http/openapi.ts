import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { type Access, describeAccess } from './access.js';
import type { App } from './app-type.js';
import { ErrorEnvelope } from './envelope.js';

const require = createRequire(import.meta.url);

/** The errors every route of each access kind can answer with, added to its documented responses. */
function errorResponsesFor(rule: Access | undefined, hasInput: boolean): number[] {
  const codes = [429, 500];
  if (hasInput) codes.push(400, 422);
  if (rule && rule.kind !== 'public') codes.push(401, 403, 423);
  return codes;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed request (bad JSON, wrong content type) or a domain rule refused it',
  401: 'Authentication missing or invalid (AUTHENTICATION_FAILED)',
  403: 'Insufficient permissions, or the client address is blocked',
  404: 'Resource not found',
  409: 'Conflict with the current state',
  413: 'Payload too large',
  422: 'Validation failed (VALIDATION_ERROR with field and reason)',
  423: 'The system is in maintenance (SYSTEM_LOCKED)',
  429: 'Rate limit exceeded (RATE_LIMIT_EXCEEDED, with retry_after)',
  500: 'Internal error (INTERNAL_ERROR; details are logged, never shown)',
};

/**
 * OpenAPI 3.1 generated from the route schemas. Each route's access rule is written into its description and
 * security requirement, and the error envelope is added for every error status it can answer with.
 */
export async function registerOpenApi(app: App, version: string): Promise<void> {
  app.addSchema(ErrorEnvelope);
  app.addHook('onRoute', (route) => {
    const url = route.url;
    if (
      url.startsWith('/docs') ||
      url === '/redoc' ||
      url === '/openapi.json' ||
      url === '/redoc/redoc.standalone.js'
    ) {
      route.config = { ...(route.config ?? {}), access: { kind: 'public' }, maintenanceExempt: true };
      route.schema = { ...(route.schema ?? {}), hide: true };
      return;
    }
    if (!route.schema || route.schema.hide) return;
    const rule = route.config?.access;
    const schema = route.schema as Record<string, unknown>;
    const responses = { ...((schema['response'] as Record<string, unknown>) ?? {}) };
    const hasInput = Boolean(schema['body'] || schema['querystring'] || schema['params']);
    for (const code of errorResponsesFor(rule, hasInput)) {
      if (!responses[code])
        responses[code] = { description: ERROR_DESCRIPTIONS[code], $ref: 'ErrorEnvelope#' };
    }
    schema['response'] = responses;
    if (rule) {
      schema['description'] = [schema['description'], describeAccess(rule)].filter(Boolean).join('\n\n');
      if (rule.kind !== 'public') schema['security'] = [{ bearerAuth: [] }, { apiKeyAuth: [] }];
      else schema['security'] = [];
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Platform API',
        version,
        description:
          'A plugin-based application platform: status, configuration, users, plugins, tasks, services, caches, ' +
          'backups, security operations, and an event system delivering by webhook, WebSocket and server-sent events.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
      security: [{ bearerAuth: [] }, { apiKeyAuth: [] }],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json['$id'] ?? `def-${i}`) },
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true, persistAuthorization: false },
    staticCSP: true,
  });

  const redocBundle = readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'));
  app.get('/redoc/redoc.standalone.js', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('application/javascript').header('cache-control', 'public, max-age=86400').send(redocBundle),
  );
  app.get('/redoc', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/html; charset=utf-8').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform API — reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="/openapi.json"></redoc><script src="/redoc/redoc.standalone.js"></script></body></html>`),
  );
}
