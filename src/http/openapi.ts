import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { type Access, describeAccess } from './access.js';
import type { App } from './app-type.js';
import { ErrorEnvelope } from './envelope.js';
import { boundInput } from './input-bounds.js';
import { addOpenApiExamples } from './openapi-examples.js';
import { optionalBody } from './optional-body.js';

const require = createRequire(import.meta.url);

interface RouteTraits {
  rule: Access | undefined;
  hasBody: boolean;
  hasInput: boolean;
  hasParams: boolean;
  /** POST, PUT, PATCH and DELETE: the body parser runs whether or not the route declares a body. */
  takesBody: boolean;
  maintenanceExempt: boolean;
  rateLimited: boolean;
  /** Login, refresh, logout, and routes whose handler applies the access rule: they answer 401 too. */
  credentialEndpoint: boolean;
}

/**
 * The error statuses a route can answer with because of the gates every request passes (see
 * request-gates.ts), whatever its handler does; a route declares its own domain errors itself.
 */
function errorResponsesFor(r: RouteTraits): number[] {
  // 403: a blocked client address is refused on every route, public ones included.
  const codes = [403, 500, 503];
  if (r.hasInput) codes.push(422);
  // Malformed JSON, a wrong content type or an oversized body is refused before any route schema is looked at.
  if (r.hasInput || r.takesBody) codes.push(400);
  if (r.hasBody || r.takesBody) codes.push(413, 415);
  if (r.hasParams) codes.push(404);
  if ((r.rule && r.rule.kind !== 'public') || r.credentialEndpoint) codes.push(401);
  if (r.rule && !r.maintenanceExempt) codes.push(423);
  if (r.rateLimited) codes.push(429);
  return codes;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed request (bad JSON, wrong content type) or a domain rule refused it',
  401: 'Authentication missing or invalid (AUTHENTICATION_FAILED)',
  403: 'Insufficient permissions, or the client address is blocked',
  404: 'Resource not found',
  409: 'Conflict with the current state',
  413: 'Payload too large',
  415: 'The request content type is not supported (UNSUPPORTED_MEDIA_TYPE)',
  422: 'Validation failed (VALIDATION_ERROR with field and reason)',
  423: 'The system is in maintenance (SYSTEM_LOCKED)',
  429: 'Rate limit exceeded (RATE_LIMIT_EXCEEDED, with retry_after)',
  500: 'Internal error (INTERNAL_ERROR; details are logged, never shown)',
  503: 'A backing service (database, Redis) is unavailable (SERVICE_UNAVAILABLE); retry after Retry-After',
};

const JWT_DESCRIPTION =
  'A JWT access token (HS256, 15 minutes) from POST /api/v1/auth/login, following the JSON Web Token Best ' +
  'Current Practices of RFC8725: the algorithm is fixed (`none` and others are refused), and `exp`, `sub`, ' +
  '`sid` and `jti` are required and checked.';

const header = (description: string, type: 'string' | 'integer' = 'integer') => ({ type, description });
const REQUEST_ID_HEADER = {
  'X-Request-Id': header('The request id (echoed when the client sent a well-formed one)', 'string'),
};
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': header('Requests allowed in the current window'),
  'X-RateLimit-Remaining': header('Requests left in the current window'),
  'X-RateLimit-Reset': header('When the window ends (Unix epoch seconds)'),
  'X-RateLimit-Window': header('Length of the window in seconds'),
};

/** Adds a description and the response headers to a declared response, without changing the shared schema. */
function describeResponse(response: unknown, code: string, r: RouteTraits): unknown {
  if (typeof response !== 'object' || response === null) return response;
  const declared = response as Record<string, unknown>;
  const headers = {
    ...REQUEST_ID_HEADER,
    ...(r.rateLimited ? RATE_LIMIT_HEADERS : {}),
    ...(code === '429' ? { 'Retry-After': header('Seconds until the window ends') } : {}),
    ...((declared['headers'] as Record<string, unknown> | undefined) ?? {}),
  };
  const description =
    declared['x-response-description'] ??
    declared['description'] ??
    (code.startsWith('2') ? 'Success' : ERROR_DESCRIPTIONS[Number(code)]);
  // A `$ref` response takes its description from a sibling `description`; an inline schema from the
  // swagger plugin's `x-response-description` (a `description` there would describe the schema instead).
  return declared['$ref']
    ? { ...declared, description, headers }
    : { ...declared, 'x-response-description': description, headers };
}

interface RouteLike {
  method: string | string[];
  config?: unknown;
}

/** The route's declared responses plus the error envelope for every status the request gates can answer. */
function withResponses(schema: unknown, route: RouteLike): unknown {
  if (typeof schema !== 'object' || schema === null || (schema as { hide?: boolean }).hide) return schema;
  const s = schema as Record<string, unknown>;
  const config = (route.config ?? {}) as {
    access?: Access;
    maintenanceExempt?: boolean;
    rateLimitExempt?: boolean;
    authBucket?: boolean;
    accessInHandler?: boolean;
  };
  const traits: RouteTraits = {
    rule: config.access,
    hasBody: Boolean(s['body']),
    hasInput: Boolean(s['body'] || s['querystring'] || s['params']),
    hasParams: Boolean(s['params']),
    takesBody: [route.method].flat().some((m) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(m)),
    maintenanceExempt: config.maintenanceExempt === true,
    rateLimited: config.rateLimitExempt !== true,
    credentialEndpoint: config.authBucket === true || config.accessInHandler === true,
  };
  const responses: Record<string, unknown> = {};
  for (const [code, response] of Object.entries((s['response'] as Record<string, unknown>) ?? {}))
    responses[code] = describeResponse(response, code, traits);
  for (const code of errorResponsesFor(traits)) {
    if (!responses[code])
      responses[code] = describeResponse({ $ref: 'ErrorEnvelope#' }, String(code), traits);
  }
  return { ...s, response: responses };
}

interface OpenApiOperation {
  tags?: string[];
  operationId?: string;
  requestBody?: { required?: boolean; content?: Record<string, never> };
  parameters?: { in?: string; name?: string; description?: string }[];
}
/**
 * What the generic error examples of an operation depend on, and whether its body may be left out (the
 * optionalBody hook), noted per operationId as routes are added.
 */
type ExampleTraits = Map<string, { rule: Access | undefined; authBucket: boolean; optionalBody?: boolean }>;
interface OpenApiObject {
  paths?: Record<string, Record<string, OpenApiOperation>>;
  tags?: { name: string }[];
}

/**
 * Final touches on the generated document: a Fastify wildcard (`/*`, which may span several segments) becomes
 * a named `{path}` parameter, since OpenAPI path parameters need a name; one route serving several methods
 * gets one operationId per method; every operation gets its examples; and every tag the operations use is
 * declared at the top level.
 */
function finishDocument(doc: OpenApiObject, exampleTraits: ExampleTraits): OpenApiObject {
  const paths: Record<string, Record<string, OpenApiOperation>> = {};
  const ids = new Set<string>();
  const names = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const wildcard = path.includes('{*}');
    const ops: Record<string, OpenApiOperation> = {};
    for (const [method, op] of Object.entries(item)) {
      let next = { ...op };
      const traits = exampleTraits.get(op.operationId ?? '') ?? { rule: undefined, authBucket: false };
      if (wildcard && next.parameters)
        next.parameters = next.parameters.map((p) =>
          p.in === 'path' && p.name === '*'
            ? { ...p, name: 'path', required: true, description: 'The rest of the path; may hold slashes' }
            : p,
        );
      if (next.operationId) {
        if (ids.has(next.operationId))
          next.operationId = `${next.operationId}${method[0]?.toUpperCase()}${method.slice(1)}`;
        ids.add(next.operationId);
      }
      if (traits.optionalBody && next.requestBody)
        next.requestBody = { ...next.requestBody, required: false };
      next = addOpenApiExamples(next, traits);
      for (const tag of next.tags ?? []) names.add(tag);
      ops[method] = next;
    }
    paths[wildcard ? path.replace('{*}', '{path}') : path] = ops;
  }
  const tags = [...names].sort().map((name) => ({ name, description: `Operations of the ${name} area` }));
  return { ...doc, paths, tags };
}

/**
 * OpenAPI 3.1 generated from the route schemas. Each route's access rule is written into its description and
 * security requirement, and the error envelope is added for every error status it can answer with.
 */
export async function registerOpenApi(app: App, version: string): Promise<void> {
  app.addSchema(ErrorEnvelope);
  const described = new WeakSet<object>();
  const exampleTraits: ExampleTraits = new Map();
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
    const schema = route.schema as Record<string, unknown>;
    // The HEAD twin of a GET route shares its schema object: describe it once.
    if (described.has(schema)) return;
    described.add(schema);
    for (const part of ['body', 'querystring', 'params', 'headers'])
      if (schema[part]) schema[part] = boundInput(schema[part]);
    const rule = route.config?.access;
    if (typeof schema['operationId'] === 'string')
      exampleTraits.set(schema['operationId'], {
        rule,
        authBucket: route.config?.authBucket === true,
        optionalBody: [route.preValidation].flat().includes(optionalBody),
      });
    if (rule) {
      schema['description'] = [schema['description'], describeAccess(rule)].filter(Boolean).join('\n\n');
      // The admin schemes name the /admin surface (OWASP API5: its security differs from every other path's);
      // event replay, purge and audit take an admin scope too, on the events surface's schemes.
      if (rule.kind === 'admin' && route.url.startsWith('/api/v1/admin/'))
        schema['security'] = [{ adminBearerAuth: [] }, { adminApiKeyAuth: [] }];
      else if (rule.kind !== 'public') schema['security'] = [{ bearerAuth: [] }, { apiKeyAuth: [] }];
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
        contact: { name: 'Platform maintainers' },
      },
      // The same origin that serves the platform; the interface is meant for its clients, not internal only.
      servers: [{ url: '/', 'x-internal': false } as { url: string }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: JWT_DESCRIPTION },
          apiKeyAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-Key',
            description: 'An API key (`plat_…`).',
          },
          // Admin operations name their own schemes: the mechanism is the same, but only an admin's credential
          // with the area's admin scope is accepted, which a client can tell from the document.
          adminBearerAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: `An administrator's access token. ${JWT_DESCRIPTION}`,
          },
          adminApiKeyAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-Key',
            description: 'An API key of an administrator, carrying the admin scope of the area.',
          },
        },
      },
      security: [{ bearerAuth: [] }, { apiKeyAuth: [] }],
    },
    // Responses are described here, in the document only: declared on the route, every error status would get
    // a response serializer of its own compiled at start-up (about a thousand of them), for bodies the error
    // handler builds itself.
    transform: ({ schema, url, route }) => ({ schema: withResponses(schema, route), url }) as never,
    transformObject: (document) =>
      finishDocument((document as { openapiObject: OpenApiObject }).openapiObject, exampleTraits) as never,
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json['$id'] ?? `def-${i}`) },
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true, persistAuthorization: false },
    staticCSP: true,
  });

  // Read on first use: a megabyte that most instances never serve should not cost start-up time or memory.
  let redocBundle: Buffer | undefined;
  app.get('/redoc/redoc.standalone.js', { schema: { hide: true } }, async (_req, reply) => {
    redocBundle ??= readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'));
    return reply
      .type('application/javascript')
      .header('cache-control', 'public, max-age=86400')
      .send(redocBundle);
  });
  app.get('/redoc', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/html; charset=utf-8').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform API — reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="/openapi.json"></redoc><script src="/redoc/redoc.standalone.js"></script></body></html>`),
  );
}
