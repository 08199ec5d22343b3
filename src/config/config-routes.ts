import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { nestingRefusal } from '../http/json-body-parser.js';
import { type PlatformEvents, requestOrigin } from '../kernel/platform-events.js';
import { maskSecrets } from './config-masking.js';
import { ConfigSchema } from './config-schema.js';
import type { ConfigChange, ConfigService } from './config-service.js';
import type { ConfigTree } from './config-tree.js';

const tags = ['config'];
const SectionNames = Object.keys(ConfigSchema.properties);
const SectionQuery = Type.Optional(
  Type.Union(
    SectionNames.map((s) => Type.Literal(s)),
    { description: 'One section only' },
  ),
);
/** A copy of a schema without `default`: the serializer would fill absent sections from defaults. */
function withoutDefaults<T extends TSchema>(schema: T): T {
  return JSON.parse(JSON.stringify(schema), (key, value: unknown) =>
    key === 'default' ? undefined : value,
  ) as T;
}

/** The configuration as shown: every section of the schema (one when `section` is given), secrets masked. */
const ConfigView = withoutDefaults(
  Type.Partial(ConfigSchema, {
    description:
      'Sections of keys. `x-secret` keys show `********` when they have a value and secrets are masked; ' +
      '`x-restart` keys take effect after a restart.',
  }),
);
const ChangesBody = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'A nested object of sections to keys, or dotted keys (`"rate_limits.authenticated.max": 2000`). ' +
    '`null` removes a runtime change; the mask `********` leaves a secret unchanged. ' +
    'Unknown keys, wrong types and boot-only keys (database, storage, redis) are refused with ' +
    'CONFIG_VALIDATION_ERROR listing every problem, and nothing is changed.',
  examples: [{ rate_limits: { authenticated: { max: 2000 } } }],
});
const Metadata = Type.Object({
  last_updated: Type.Union([Timestamp, Type.Null()]),
  updated_by: Type.Union([Type.String(), Type.Null()]),
  config_version: Type.String({ description: 'Increments on every change', examples: ['3'] }),
});
const UpdateResult = Type.Object({
  updated_keys: Type.Array(Type.String(), {
    description: 'Dotted paths of the keys whose value changed',
    examples: [['rate_limits.authenticated.max']],
  }),
  restart_required: Type.Boolean({
    description: 'True when a changed key takes effect only after a restart',
  }),
  config_version: Type.String(),
});
// Domain errors of these routes, beside those every route can answer with (added by src/http/openapi.ts).
const Refused = {
  description: 'CONFIG_VALIDATION_ERROR: every problem in details.errors; nothing was changed',
  $ref: 'ErrorEnvelope#',
};
const Locked = {
  description: 'RESOURCE_CONFLICT: another configuration change held the lock too long; retry',
  $ref: 'ErrorEnvelope#',
};

const ReloadResult = Type.Object({
  changed_keys: Type.Array(Type.String(), { description: 'Dotted paths of the keys whose value changed' }),
  restart_required: Type.Boolean(),
  metadata: Metadata,
});

export function registerConfigRoutes(
  app: App,
  deps: { config: ConfigService; audit: AuditLog; events: PlatformEvents },
): void {
  // Own scope for an own JSON parser: Fastify's default refuses `__proto__` keys with a bare 400, while
  // configuration changes must name every refused key in a CONFIG_VALIDATION_ERROR. JSON.parse makes such
  // keys own properties, which ConfigService finds and refuses before any merge.
  void app.register((scope, _options, next) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = body as string;
      const tooDeep = nestingRefusal(text);
      if (tooDeep) {
        done(tooDeep, undefined);
        return;
      }
      try {
        done(null, JSON.parse(text));
      } catch {
        const empty = text.trim() === '';
        done(
          new AppError(
            'VALIDATION_ERROR',
            empty ? 'The request body is empty' : 'The request body is not valid JSON',
            {
              status: 400,
              details: { field: 'body', reason: empty ? 'empty body' : 'malformed JSON' },
            },
          ),
          undefined,
        );
      }
    });
    routes(scope, deps);
    next();
  });
}

function routes(app: App, deps: { config: ConfigService; audit: AuditLog; events: PlatformEvents }): void {
  const view = (section: string | undefined, mask: boolean): ConfigTree => {
    const tree = structuredClone(deps.config.current()) as unknown as ConfigTree;
    const shown = mask ? maskSecrets(tree) : tree;
    return section ? { [section]: shown[section] } : shown;
  };

  const announce = async (request: FastifyRequest, action: string, change: ConfigChange) => {
    const { config_version } = deps.config.metadata();
    // Every admin mutation leaves an audit entry, also one that changed nothing (who tried what is worth keeping).
    await deps.audit.record(request, {
      action,
      resourceType: 'config',
      resourceId: config_version,
      details: { ...change, config_version },
    });
    if (change.updated_keys.length === 0) return;
    deps.events.announce(
      'system.config.updated',
      'system',
      { ...change, config_version },
      {
        actor: request.principal && { id: request.principal.userId, username: request.principal.username },
        origin: requestOrigin(request),
      },
    );
  };

  const update = async (request: FastifyRequest, body: unknown) => {
    const change = await deps.config.update(body, request.principal?.username ?? 'unknown');
    await announce(request, 'config.update', change);
    return { ...change, config_version: deps.config.metadata().config_version };
  };

  app.get(
    '/api/v1/config',
    {
      config: { access: access.permission('admin:config') },
      schema: {
        operationId: 'getConfig',
        tags,
        summary: 'The effective configuration; secrets are masked unless mask_secrets=false (admins only)',
        querystring: Type.Object(
          { section: SectionQuery, mask_secrets: Type.Optional(Type.Boolean({ default: true })) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(ConfigView) },
      },
    },
    async (request) => {
      const mask = request.query.mask_secrets !== false;
      if (!mask && !request.principal?.isAdmin) {
        throw new AppError('ADMIN_REQUIRED', 'Only administrators may read unmasked secrets', {
          details: { required_role: 'admin' },
        });
      }
      return ok(request, view(request.query.section, mask));
    },
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/v1/config',
      config: { access: access.permission('admin:config') },
      schema: {
        operationId: method === 'PUT' ? 'updateConfig' : 'patchConfig',
        tags,
        summary: 'Change configuration keys (a nested object of sections); every problem is reported at once',
        body: ChangesBody,
        response: { 200: Envelope(UpdateResult), 400: Refused, 409: Locked },
      },
      handler: async (request) => ok(request, await update(request, request.body)),
    });
  }

  app.get(
    '/api/v1/admin/config',
    {
      config: { access: access.admin('admin:config') },
      schema: {
        operationId: 'adminGetConfig',
        tags: ['admin', ...tags],
        summary: 'The system configuration with its metadata; include_secrets=true shows secret values',
        querystring: Type.Object(
          { section: SectionQuery, include_secrets: Type.Optional(Type.Boolean({ default: false })) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Type.Object({ config: ConfigView, metadata: Metadata })) },
      },
    },
    async (request) => {
      if (request.query.include_secrets) {
        await deps.audit.record(request, {
          action: 'config.read_secrets',
          resourceType: 'config',
          resourceId: null,
          details: { section: request.query.section ?? null },
        });
      }
      return ok(request, {
        config: view(request.query.section, !request.query.include_secrets),
        metadata: deps.config.metadata(),
      });
    },
  );

  // PATCH beside PUT (decisions §1); a change names only the keys it sets, so both merge.
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/v1/admin/config',
      config: { access: access.admin('admin:config') },
      schema: {
        operationId: method === 'PUT' ? 'adminUpdateConfig' : 'adminPatchConfig',
        tags: ['admin', ...tags],
        summary: 'Change configuration keys; answers with the change and the new metadata',
        body: ChangesBody,
        response: {
          200: Envelope(Type.Object({ ...UpdateResult.properties, metadata: Metadata })),
          400: Refused,
          409: Locked,
        },
      },
      handler: async (request) =>
        ok(request, { ...(await update(request, request.body)), metadata: deps.config.metadata() }),
    });
  }

  app.post(
    '/api/v1/admin/config/reload',
    {
      config: { access: access.admin('admin:config') },
      schema: {
        operationId: 'adminReloadConfig',
        tags: ['admin', ...tags],
        summary: 'Re-read the config file and environment without a restart; runtime changes stay on top',
        response: { 200: Envelope(ReloadResult), 400: Refused, 409: Locked },
      },
    },
    async (request) => {
      const change = await deps.config.reload(request.principal?.username ?? 'unknown');
      await announce(request, 'config.reload', change);
      return ok(request, {
        changed_keys: change.updated_keys,
        restart_required: change.restart_required,
        metadata: deps.config.metadata(),
      });
    },
  );
}
