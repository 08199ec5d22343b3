import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import type { PlatformEvents } from '../kernel/platform-events.js';
import { maskSecrets } from './config-masking.js';
import { ConfigSchema } from './config-schema.js';
import type { ConfigService } from './config-service.js';
import type { ConfigTree } from './config-tree.js';

const tags = ['config'];
const SectionNames = Object.keys(ConfigSchema.properties);
const SectionQuery = Type.Optional(
  Type.Union(
    SectionNames.map((s) => Type.Literal(s)),
    { description: 'One section only' },
  ),
);
const ConfigTreeSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Sections of keys',
  examples: [{ rate_limits: { authenticated: { max: 2000 } } }],
});
const UpdateResult = Type.Object({
  updated_keys: Type.Array(Type.String(), { description: 'Dotted paths of the keys whose value changed' }),
  restart_required: Type.Boolean(),
  config_version: Type.String(),
});
const Metadata = Type.Object({
  last_updated: Type.Union([Timestamp, Type.Null()]),
  updated_by: Type.Union([Type.String(), Type.Null()]),
  config_version: Type.String(),
});

export function registerConfigRoutes(
  app: App,
  deps: { config: ConfigService; audit: AuditLog; events: PlatformEvents },
): void {
  const view = (section: string | undefined, mask: boolean): ConfigTree => {
    const tree = structuredClone(deps.config.current()) as unknown as ConfigTree;
    const shown = mask ? maskSecrets(tree) : tree;
    return section ? { [section]: shown[section] } : shown;
  };

  const update = async (request: FastifyRequest, body: unknown) => {
    const actor = request.principal?.username ?? 'unknown';
    const result = await deps.config.update(body, actor);
    if (result.updated_keys.length > 0) {
      await deps.audit.record(request, {
        action: 'config.update',
        resourceType: 'config',
        resourceId: deps.config.metadata().config_version,
        details: { updated_keys: result.updated_keys, restart_required: result.restart_required },
      });
      deps.events.announce(
        'system.config.updated',
        'system',
        {
          updated_keys: result.updated_keys,
          restart_required: result.restart_required,
          config_version: deps.config.metadata().config_version,
        },
        {
          actor: request.principal && { id: request.principal.userId, username: request.principal.username },
          requestId: request.id,
        },
      );
    }
    return { ...result, config_version: deps.config.metadata().config_version };
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
        response: { 200: Envelope(ConfigTreeSchema) },
      },
    },
    async (request) => {
      const mask = request.query.mask_secrets !== false;
      if (!mask && !request.principal?.isAdmin) {
        throw new AppError('ADMIN_REQUIRED', 'Only administrators may read unmasked secrets');
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
        body: ConfigTreeSchema,
        response: { 200: Envelope(UpdateResult) },
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
        tags: ['admin'],
        summary: 'The system configuration with its metadata; include_secrets=true shows secret values',
        querystring: Type.Object(
          { section: SectionQuery, include_secrets: Type.Optional(Type.Boolean({ default: false })) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Type.Object({ config: ConfigTreeSchema, metadata: Metadata })) },
      },
    },
    async (request) => {
      if (request.query.include_secrets) {
        await deps.audit.record(request, {
          action: 'config.read_secrets',
          resourceType: 'config',
          resourceId: null,
        });
      }
      return ok(request, {
        config: view(request.query.section, !request.query.include_secrets),
        metadata: deps.config.metadata(),
      });
    },
  );

  app.put(
    '/api/v1/admin/config',
    {
      config: { access: access.admin('admin:config') },
      schema: {
        operationId: 'adminUpdateConfig',
        tags: ['admin'],
        summary: 'Change configuration keys',
        body: ConfigTreeSchema,
        response: { 200: Envelope(Type.Object({ ...UpdateResult.properties, metadata: Metadata })) },
      },
    },
    async (request) =>
      ok(request, { ...(await update(request, request.body)), metadata: deps.config.metadata() }),
  );

  app.post(
    '/api/v1/admin/config/reload',
    {
      config: { access: access.admin('admin:config') },
      schema: {
        operationId: 'adminReloadConfig',
        tags: ['admin'],
        summary: 'Re-read the config file and environment without a restart',
        response: {
          200: Envelope(Type.Object({ changed_keys: Type.Array(Type.String()), metadata: Metadata })),
        },
      },
    },
    async (request) => {
      const result = await deps.config.reload();
      await deps.audit.record(request, { action: 'config.reload', resourceType: 'config', details: result });
      return ok(request, { ...result, metadata: deps.config.metadata() });
    },
  );
}
