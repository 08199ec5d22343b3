import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import { TaskView } from '../tasks/task-view.js';
import { actorOf, itemOf, type PluginRouteDeps } from './plugin-admin-routes.js';
import {
  PluginDetail,
  PluginErrors,
  PluginIdParams,
  PluginListItem,
  ResourceCreateBody,
  ResourceUpdateBody,
} from './plugin-schemas.js';
import { pluginDetail, pluginList } from './plugin-views.js';

const tags = ['plugins'];

/**
 * The resource API `/api/v1/plugins` (§4.4): read:plugins to read, write:plugins to install, change and
 * remove. Creating installs `{name, version}` from a repository; PUT and PATCH change `enabled`, `config` or
 * `version` (an update task). Changes are audited like their admin counterparts.
 */
export function registerPluginResourceRoutes(app: App, deps: PluginRouteDeps): void {
  const { manager, audit } = deps;

  app.get(
    '/api/v1/plugins',
    {
      config: { access: access.permission('read:plugins') },
      schema: {
        operationId: 'listPlugins',
        tags,
        summary: 'Installed plugins, in load order',
        response: { 200: Envelope(Type.Object({ plugins: Type.Array(PluginListItem) })) },
      },
    },
    async (request) => ok(request, { plugins: await pluginList(manager) }),
  );

  app.post(
    '/api/v1/plugins',
    {
      config: { access: access.permission('write:plugins') },
      schema: {
        operationId: 'createPlugin',
        tags,
        summary: 'Install a plugin from the repositories (enabled at once unless enabled is false)',
        body: ResourceCreateBody,
        response: { ...PluginErrors, 201: Envelope(Type.Object({ plugin: PluginListItem })) },
      },
    },
    async (request, reply) => {
      const { name, version, config, enabled } = request.body;
      const row = await manager.install(
        { source: 'repository', name, version, config, enabled },
        actorOf(request),
      );
      await audit.record(request, {
        action: 'plugin.install',
        resourceType: 'plugin',
        resourceId: row.id,
        details: { version: row.version, source: row.source, status: row.status },
      });
      return reply.code(201).send(ok(request, { plugin: await itemOf(manager, row.id) }));
    },
  );

  app.get(
    '/api/v1/plugins/:plugin_id',
    {
      config: { access: access.permission('read:plugins') },
      schema: {
        operationId: 'getPlugin',
        tags,
        summary: "A plugin's detail (secrets of its configuration masked)",
        params: PluginIdParams,
        response: { ...PluginErrors, 200: Envelope(Type.Object({ plugin: PluginDetail })) },
      },
    },
    async (request) =>
      ok(request, { plugin: await pluginDetail(manager, deps.logBook, request.params.plugin_id) }),
  );

  const update = async (
    request: FastifyRequest<{
      Params: Static<typeof PluginIdParams>;
      Body: Static<typeof ResourceUpdateBody>;
    }>,
    reply: FastifyReply,
  ) => {
    const id = request.params.plugin_id;
    const body = request.body;
    const who = actorOf(request);
    await manager.row(id);
    // PUT replaces the configuration; PATCH merges the keys it sends into the stored one.
    if (body.config !== undefined)
      await manager.configure(id, body.config, who, request.method === 'PATCH' ? 'merge' : 'replace');
    if (body.enabled === true) await manager.enable(id, who);
    if (body.enabled === false) await manager.disable(id, who);
    const task =
      body.version !== undefined
        ? await deps.updates.start(
            id,
            { version: body.version, backup_current: true, restart_after_update: true },
            who,
          )
        : null;
    await audit.record(request, {
      action: 'plugin.update',
      resourceType: 'plugin',
      resourceId: id,
      details: {
        changed: Object.keys(body),
        ...(body.enabled === undefined ? {} : { enabled: body.enabled }),
        ...(task ? { target_version: body.version, task_id: task.id } : {}),
      },
    });
    if (task) reply.code(202);
    return ok(request, { plugin: await itemOf(manager, id), task });
  };
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/v1/plugins/:plugin_id',
      config: { access: access.permission('write:plugins') },
      schema: {
        operationId: method === 'PUT' ? 'updatePlugin' : 'patchPlugin',
        tags,
        summary:
          'Change enabled, config (secrets sent back masked keep their value) or version (202 with the update task)',
        params: PluginIdParams,
        body: ResourceUpdateBody,
        response: {
          ...PluginErrors,
          200: Envelope(Type.Object({ plugin: PluginListItem, task: Type.Union([TaskView, Type.Null()]) })),
          202: Envelope(Type.Object({ plugin: PluginListItem, task: Type.Union([TaskView, Type.Null()]) })),
        },
      },
      handler: update,
    });
  }

  app.delete(
    '/api/v1/plugins/:plugin_id',
    {
      config: { access: access.permission('write:plugins') },
      schema: {
        operationId: 'deletePlugin',
        tags,
        summary: 'Uninstall a plugin',
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
