import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthService } from '../auth/auth-service.js';
import type { Permission } from '../auth/roles.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import { credentialsOf, enforceAccess } from '../http/request-gates.js';
import { ROUTE_METHODS } from './plugin-route-table.js';
import type { PluginRuntime } from './plugin-runtime.js';
import type { RouteAccess } from './plugin-wire.js';
import type { PluginRequest } from './sdk.js';

const HIDDEN_HEADERS = new Set(['authorization', 'x-api-key', 'cookie', 'proxy-authorization']);

const noRoute = (id: string, path: string) =>
  new AppError('RESOURCE_NOT_FOUND', `No route ${path} of plugin '${id}'`, {
    details: { resource: 'plugin route', plugin_id: id, path },
  });

/**
 * Mounts every plugin's routes under `/api/v1/ext/{plugin_id}/` through one Fastify route: it finds the
 * plugin running on this instance (a disabled, failed or unknown plugin answers 404), matches the path in
 * that plugin's own route table, applies the route's access rule, and runs the handler in the plugin's realm.
 * The gates of every request (blocked IPs, rate limits, maintenance) have already run.
 */
export function registerPluginDispatcher(
  app: App,
  deps: { runtime: (id: string) => PluginRuntime | undefined; auth: AuthService },
): void {
  const schema = {
    operationId: 'callPluginRoute',
    tags: ['plugins'],
    summary: 'Call a route of an active plugin (its own routes, mounted below /api/v1/ext/{plugin_id}/)',
    description:
      'Authentication follows the route: an authenticated caller by default, or what the plugin declared ' +
      '(public, or a permission). The answer is the envelope with the data the plugin returned.',
    params: Type.Object({ plugin_id: Type.String(), '*': Type.Optional(Type.String()) }),
    response: { '2xx': Envelope(Type.Unknown()) },
  };
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const params = request.params as { plugin_id: string; '*'?: string };
    const id = params.plugin_id;
    const path = `/${params['*'] ?? ''}`;
    const runtime = deps.runtime(id);
    if (!runtime?.isActive()) {
      throw new AppError('RESOURCE_NOT_FOUND', `The plugin '${id}' is not active`, {
        details: { resource: 'plugin', id },
      });
    }
    const match = runtime.routes.match(request.method, path);
    if (!match) throw noRoute(id, path);
    await enforce(match.route.access, request, deps.auth);
    const result = await runtime.handle(match.route, toPluginRequest(request, path, match.params));
    reply.code(result.status).headers(result.headers);
    return ok(request, result.data);
  };
  for (const url of ['/api/v1/ext/:plugin_id', '/api/v1/ext/:plugin_id/*']) {
    app.route({
      method: [...ROUTE_METHODS],
      url,
      // The plugin's route decides who may call; the dispatcher applies it once the route is known.
      config: { access: access.public(), accessInHandler: true },
      schema: { ...schema, ...(url.endsWith('*') ? {} : { hide: true }) },
      handler,
    });
  }
}

/**
 * Applies a plugin route's access rule with the request gates' own check. The gates drop a credential's error
 * on public routes; authenticating again here gives a request with bad credentials the precise refusal.
 */
async function enforce(rule: RouteAccess, request: FastifyRequest, auth: AuthService): Promise<void> {
  if (rule === 'public') return;
  const principal = request.principal ?? (await auth.authenticate(credentialsOf(request)));
  enforceAccess(
    // A plugin may name any permission string; the check compares strings, whatever the type says.
    rule === 'authenticated' ? access.authenticated() : access.permission(rule.permission as Permission),
    principal,
  );
}

function toPluginRequest(
  request: FastifyRequest,
  path: string,
  params: Record<string, string>,
): PluginRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(request.headers)) {
    if (v === undefined || HIDDEN_HEADERS.has(k)) continue;
    headers[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries((request.query as Record<string, unknown> | undefined) ?? {})) {
    if (typeof v === 'string') query[k] = v;
    else if (Array.isArray(v)) query[k] = v.map(String);
  }
  const p = request.principal;
  return {
    method: request.method,
    path,
    params,
    query,
    headers,
    body: request.body,
    user: p
      ? { id: p.userId, username: p.username, roles: [...p.roles], permissions: [...p.permissions] }
      : null,
    request_id: request.id,
    ip: request.ip,
  };
}
