import FindMyWay from 'find-my-way';
import type { RouteAccess } from './plugin-wire.js';

export const ROUTE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type RouteMethod = (typeof ROUTE_METHODS)[number];

/** One route a plugin registered, with the function that runs its handler (in the plugin's realm). */
export interface PluginRoute {
  method: RouteMethod;
  path: string;
  access: RouteAccess;
  invoke: (payload: unknown) => Promise<unknown>;
}

/**
 * The routes of one loaded plugin, matched with Fastify's own router (find-my-way) below the plugin's prefix.
 * Each plugin has its own table: nothing one plugin registers can reach another's requests, and a table is
 * dropped whole when its plugin stops (Fastify cannot remove routes, so plugins never register on it).
 */
export class PluginRouteTable {
  private readonly router = FindMyWay({
    ignoreTrailingSlash: true,
    caseSensitive: true,
    maxParamLength: 500,
  });
  private readonly list: PluginRoute[] = [];
  /** `ctx.routes.hook` handlers: they run before this plugin's route handlers only. */
  readonly hooks: ((payload: unknown) => Promise<unknown>)[] = [];

  add(route: PluginRoute): void {
    if (!(ROUTE_METHODS as readonly string[]).includes(route.method)) {
      throw new Error(`routes support ${ROUTE_METHODS.join(', ')}, not ${String(route.method)}`);
    }
    try {
      this.router.on(route.method, route.path, () => {}, route);
    } catch (err) {
      throw new Error(`cannot add the route ${route.method} ${route.path}: ${(err as Error).message}`);
    }
    this.list.push(route);
  }

  match(method: string, path: string): { route: PluginRoute; params: Record<string, string> } | undefined {
    if (!(ROUTE_METHODS as readonly string[]).includes(method)) return undefined;
    const found = this.router.find(method as RouteMethod, path);
    if (!found) return undefined;
    const params: Record<string, string> = {};
    for (const [k, v] of Object.entries(found.params)) if (v !== undefined) params[k] = v;
    return { route: found.store as PluginRoute, params };
  }

  /** `GET /hello/:name`, … in the order they were added. */
  describe(): { method: string; path: string }[] {
    return this.list.map((r) => ({ method: r.method, path: r.path }));
  }
}
