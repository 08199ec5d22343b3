import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AuditLog } from '../audit/audit-log.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import { requestOrigin } from '../kernel/platform-events.js';
import { TaskView } from '../tasks/task-view.js';
import type { PluginLogBook } from './plugin-log-book.js';
import type { Actor, PluginManager } from './plugin-manager.js';
import type { PluginRepositories } from './plugin-repositories.js';
import {
  AvailablePlugin,
  InstallBody,
  PluginDetail,
  PluginErrors,
  PluginIdParams,
  PluginListItem,
  UpdateBody,
} from './plugin-schemas.js';
import type { PluginUpdates } from './plugin-update-task.js';
import { readUpload } from './plugin-upload.js';
import { listItem, pluginDetail, pluginList } from './plugin-views.js';

export interface PluginRouteDeps {
  manager: PluginManager;
  updates: PluginUpdates;
  repositories: PluginRepositories;
  logBook: PluginLogBook;
  audit: AuditLog;
  cfg: () => PlatformConfig;
}

const tags = ['plugins'];
const admin = access.admin('admin:plugins');

export const actorOf = (request: FastifyRequest): Actor => ({
  actor: request.principal
    ? { id: request.principal.userId, username: request.principal.username }
    : undefined,
  requestId: request.id,
  origin: requestOrigin(request),
});

/** The list item of one plugin, as mutations answer it. */
export async function itemOf(manager: PluginManager, id: string) {
  const item = (await pluginList(manager)).find((p) => p.id === id);
  if (item) return item;
  return listItem(await manager.row(id), manager.runtime(id), 1);
}

/** `/api/v1/admin/plugins*` (decisions §5): the admin role with scope admin:plugins; every change is audited. */
export async function registerPluginAdminRoutes(app: App, deps: PluginRouteDeps): Promise<void> {
  const { manager, audit } = deps;

  app.get(
    '/api/v1/admin/plugins',
    {
      config: { access: admin },
      schema: {
        operationId: 'adminListPlugins',
        tags,
        summary: 'Installed plugins, in load order',
        response: { 200: Envelope(Type.Object({ plugins: Type.Array(PluginListItem) })) },
      },
    },
    async (request) => ok(request, { plugins: await pluginList(manager) }),
  );

  app.get(
    '/api/v1/admin/plugins/available',
    {
      config: { access: admin },
      schema: {
        operationId: 'adminListAvailablePlugins',
        tags,
        summary: 'What the configured repositories offer (plugins.repositories)',
        response: { 200: Envelope(Type.Object({ plugins: Type.Array(AvailablePlugin) })) },
      },
    },
    async (request) => {
      const offered = await deps.repositories.available();
      const installed = new Map((await manager.rows()).map((r) => [r.id, r.version]));
      const plugins: Static<typeof AvailablePlugin>[] = [...offered.values()]
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((p) => ({
          name: p.name,
          description: p.description,
          versions: p.versions,
          latest: p.versions[0] ?? '',
          installed_version: installed.get(p.name) ?? null,
        }));
      return ok(request, { plugins });
    },
  );

  // Multipart parsing stays inside this context: only the install route takes uploads.
  const installRoute: FastifyPluginAsyncTypebox = async (scope) => {
    await scope.register(multipart, { limits: { files: 1, fields: 10 } });
    scope.post(
      '/api/v1/admin/plugins/install',
      {
        config: { access: admin },
        schema: {
          operationId: 'adminInstallPlugin',
          tags,
          summary:
            'Install a plugin from a repository (JSON) or an uploaded .tgz (multipart); enabled at once by default',
          description:
            'JSON: `{source: "repository", plugin_name, version ("latest" by default), config}`. ' +
            'Upload: `multipart/form-data` with field `source` = `file`, field `file` = the `.tgz`, and optionally ' +
            '`sha256` (checked), `config` (JSON text) and `enabled`. `config.enabled: false` installs without enabling.',
          body: {
            content: {
              'application/json': { schema: InstallBody },
              'multipart/form-data': {
                schema: Type.Unknown({
                  description: 'fields: source=file, file (the .tgz), sha256, config, enabled',
                }),
              },
            },
          },
          response: { ...PluginErrors, 201: Envelope(Type.Object({ plugin: PluginListItem })) },
        },
      },
      async (request, reply) => {
        let input: Parameters<PluginManager['install']>[0];
        if (request.isMultipart()) {
          input = await readUpload(request, deps.cfg().plugins.max_archive_bytes);
        } else {
          const body = request.body as Static<typeof InstallBody> | undefined;
          if (!body || typeof body !== 'object') {
            throw new AppError('VALIDATION_ERROR', 'A JSON request body is required', {
              status: 400,
              details: { field: 'body', reason: 'is required' },
            });
          }
          if (body.source === 'file') {
            throw new AppError(
              'VALIDATION_ERROR',
              'A file install is a multipart/form-data upload with the package in `file`',
              {
                details: { field: 'source', reason: 'file installs are uploads' },
              },
            );
          }
          input = {
            source: 'repository',
            name: body.plugin_name,
            version: body.version,
            config: body.config,
            ...(body.enabled === undefined ? {} : { enabled: body.enabled }),
          };
        }
        const row = await manager.install(input, actorOf(request));
        await audit.record(request, {
          action: 'plugin.install',
          resourceType: 'plugin',
          resourceId: row.id,
          details: { version: row.version, source: row.source, status: row.status },
        });
        return reply.code(201).send(ok(request, { plugin: await itemOf(manager, row.id) }));
      },
    );
  };
  await app.register(installRoute);

  app.get(
    '/api/v1/admin/plugins/:plugin_id',
    {
      config: { access: admin },
      schema: {
        operationId: 'adminGetPlugin',
        tags,
        summary: "A plugin's detail: manifest, state, masked configuration, metrics and recent logs",
        params: PluginIdParams,
        response: { ...PluginErrors, 200: Envelope(Type.Object({ plugin: PluginDetail })) },
      },
    },
    async (request) =>
      ok(request, { plugin: await pluginDetail(manager, deps.logBook, request.params.plugin_id) }),
  );

  for (const action of ['enable', 'disable'] as const) {
    app.post(
      `/api/v1/admin/plugins/:plugin_id/${action}`,
      {
        config: { access: admin },
        schema: {
          operationId: action === 'enable' ? 'adminEnablePlugin' : 'adminDisablePlugin',
          tags,
          summary:
            action === 'enable'
              ? 'Enable a plugin on every instance, at once (a plugin whose setup fails ends in status error)'
              : 'Disable a plugin on every instance, at once: its routes answer 404 and its subscriptions pause',
          params: PluginIdParams,
          response: { ...PluginErrors, 200: Envelope(Type.Object({ plugin: PluginListItem })) },
        },
      },
      async (request) => {
        const id = request.params.plugin_id;
        const row =
          action === 'enable'
            ? await manager.enable(id, actorOf(request))
            : await manager.disable(id, actorOf(request));
        await audit.record(request, {
          action: `plugin.${action}`,
          resourceType: 'plugin',
          resourceId: id,
          details: { version: row.version, status: row.status, ...(row.error ? { error: row.error } : {}) },
        });
        return ok(request, { plugin: await itemOf(manager, id) });
      },
    );
  }

  app.post(
    '/api/v1/admin/plugins/:plugin_id/update',
    {
      config: { access: admin },
      schema: {
        operationId: 'adminUpdatePlugin',
        tags,
        summary:
          'Update a plugin from the repositories as a plugin_update task (rolled back if the new version fails)',
        params: PluginIdParams,
        body: UpdateBody,
        response: { ...PluginErrors, 202: Envelope(Type.Object({ task: TaskView })) },
      },
    },
    async (request, reply) => {
      const id = request.params.plugin_id;
      const task = await deps.updates.start(id, request.body, actorOf(request));
      await audit.record(request, {
        action: 'plugin.update',
        resourceType: 'plugin',
        resourceId: id,
        details: { target_version: request.body.version, task_id: task.id },
      });
      return reply.code(202).send(ok(request, { task }));
    },
  );

  app.delete(
    '/api/v1/admin/plugins/:plugin_id',
    {
      config: { access: admin },
      schema: {
        operationId: 'adminUninstallPlugin',
        tags,
        summary:
          'Uninstall a plugin: stop it everywhere, remove its package, storage, subscriptions and logs',
        params: PluginIdParams,
        response: { ...PluginErrors, 200: MessageOnly },
      },
    },
    async (request) => {
      const id = request.params.plugin_id;
      await manager.uninstall(id, actorOf(request));
      await audit.record(request, { action: 'plugin.uninstall', resourceType: 'plugin', resourceId: id });
      return done(request, `Plugin '${id}' uninstalled`);
    },
  );
}
