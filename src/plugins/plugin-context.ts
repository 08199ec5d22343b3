import { AsyncLocalStorage } from 'node:async_hooks';
import { deepFreeze } from '../kernel/deep-freeze.js';
import {
  type ContextPort,
  clientError,
  type RealmInfo,
  type RouteAccess,
  recordedFailure,
} from './plugin-wire.js';
import type {
  EventHandler,
  PluginContext,
  PluginErrorCode,
  PluginFetchInit,
  PluginFetchResponse,
  PluginPermissionName,
  PluginResponse,
  RouteHandler,
  RouteOptions,
} from './sdk.js';

/** The trace context of the event whose handler is running: what `ctx.events.emit` inside it continues. */
type HandledTrace = { traceparent?: string; tracestate?: string };
const handled = new AsyncLocalStorage<HandledTrace>();

function traceOf(event: Parameters<EventHandler>[0]): HandledTrace {
  const m = (event as { metadata?: Record<string, unknown> }).metadata ?? {};
  const pick = (k: string) => (typeof m[k] === 'string' ? { [k]: m[k] as string } : {});
  return { ...pick('traceparent'), ...pick('tracestate') };
}

const ERROR_CODES: readonly PluginErrorCode[] = [
  'VALIDATION_ERROR',
  'RESOURCE_NOT_FOUND',
  'RESOURCE_CONFLICT',
  'AUTHORIZATION_DENIED',
];

/**
 * Builds the `ctx` a plugin's setup receives, in the plugin's own realm (the main thread for inline plugins,
 * the worker for worker plugins). Every capability checks the manifest's permissions here, so a call outside
 * them throws where the plugin made it; the platform side checks them again (a worker could bypass this).
 */
export function createPluginContext(info: RealmInfo, port: ContextPort): PluginContext {
  const granted = (p: PluginPermissionName) =>
    info.permissions.includes(p) || info.permissions.includes(`${p.split(':')[0]}:*`);
  const need = (permission: PluginPermissionName, what: string) => {
    if (granted(permission)) return;
    // Counted by the platform through `denied`; the handler that lets this through is not counted again.
    port.denied(permission, what);
    throw recordedFailure(
      `ctx.${what} needs the permission '${permission}', which the plugin's manifest does not grant`,
    );
  };
  // Async capabilities reject (rather than throw) when not granted, as every other failure of theirs does.
  const op = async (
    permission: PluginPermissionName,
    what: string,
    name: Parameters<ContextPort['call']>[0],
    args: unknown[],
  ) => {
    need(permission, what);
    return port.call(name, args);
  };

  const route =
    (method: string) =>
    (path: string, handler: RouteHandler, options: RouteOptions = {}): void => {
      need('http:routes', `routes.${method.toLowerCase()}`);
      if (typeof path !== 'string' || !path.startsWith('/'))
        throw new TypeError(`route paths start with '/': ${String(path)}`);
      if (typeof handler !== 'function') throw new TypeError('a route needs a handler function');
      const access: RouteAccess = options.access ?? 'authenticated';
      void port.register({ kind: 'route', method, path, access }, (payload) =>
        handler(payload as Parameters<RouteHandler>[0]),
      );
    };

  return Object.freeze({
    plugin: Object.freeze({
      id: info.id,
      version: info.version,
      permissions: Object.freeze([...info.permissions]),
      dataDir: info.dataDir,
    }),
    config: deepFreeze(structuredClone(info.config)),
    events: Object.freeze({
      emit: async (type: string, data: Record<string, unknown> = {}, options: { priority?: number } = {}) =>
        // An emit from a handler of another event continues that event's trace (its handler call's span).
        (await op('events:emit', 'events.emit', 'events.emit', [
          type,
          data,
          options,
          handled.getStore() ?? {},
        ])) as {
          event_id: string;
          timestamp: string;
        },
      subscribe: async (
        patterns: string | string[],
        handler: EventHandler,
        options: { name?: string } = {},
      ) => {
        need('events:subscribe', 'events.subscribe');
        const list = Array.isArray(patterns) ? [...patterns] : [patterns];
        if (typeof handler !== 'function') throw new TypeError('a subscription needs a handler function');
        const name = options.name ?? list.join(',');
        await port.register({ kind: 'subscription', patterns: list, name }, (payload) => {
          const p = payload as { event: Parameters<EventHandler>[0]; delivery: Parameters<EventHandler>[1] };
          return handled.run(traceOf(p.event), () => handler(p.event, p.delivery));
        });
      },
    }),
    routes: Object.freeze({
      get: route('GET'),
      post: route('POST'),
      put: route('PUT'),
      patch: route('PATCH'),
      delete: route('DELETE'),
      hook: (handler: RouteHandler) => {
        need('http:routes', 'routes.hook');
        if (typeof handler !== 'function') throw new TypeError('a hook needs a handler function');
        void port.register({ kind: 'hook' }, (payload) => handler(payload as Parameters<RouteHandler>[0]));
      },
      respond: (status: number, data?: unknown, headers: Record<string, string> = {}): PluginResponse => ({
        __platform_response: true,
        status,
        data: data ?? null,
        headers,
      }),
      error: (code: PluginErrorCode, message: string, details?: Record<string, unknown>) =>
        clientError(ERROR_CODES.includes(code) ? code : 'VALIDATION_ERROR', message, details),
    }),
    cache: Object.freeze({
      get: async <T>(key: string) =>
        (await op('cache:use', 'cache.get', 'cache.get', [key])) as T | undefined,
      set: async (key: string, value: unknown, ttlSeconds?: number) => {
        await op('cache:use', 'cache.set', 'cache.set', [key, value, ttlSeconds]);
      },
      delete: async (key: string) =>
        (await op('cache:use', 'cache.delete', 'cache.delete', [key])) as boolean,
      clear: async (pattern?: string) =>
        (await op('cache:use', 'cache.clear', 'cache.clear', [pattern])) as number,
    }),
    storage: Object.freeze({
      get: async <T>(key: string) =>
        (await op('storage:use', 'storage.get', 'storage.get', [key])) as T | undefined,
      set: async (key: string, value: unknown) => {
        await op('storage:use', 'storage.set', 'storage.set', [key, value]);
      },
      delete: async (key: string) =>
        (await op('storage:use', 'storage.delete', 'storage.delete', [key])) as boolean,
      keys: async (prefix?: string) =>
        (await op('storage:use', 'storage.keys', 'storage.keys', [prefix])) as string[],
    }),
    tasks: Object.freeze({
      register: (type: string, handler: (task: never) => unknown) => {
        need('tasks:register', 'tasks.register');
        if (typeof handler !== 'function') throw new TypeError('a task type needs a handler function');
        void port.register({ kind: 'task', type }, (payload) => handler(payload as never));
      },
      start: async (type: string, details: Record<string, unknown> = {}) =>
        (await op('tasks:register', 'tasks.start', 'tasks.start', [type, details])) as { task_id: string },
      schedule: (name: string, cron: string, handler: (run: { occurrence: string }) => unknown) => {
        need('tasks:register', 'tasks.schedule');
        if (typeof handler !== 'function') throw new TypeError('a schedule needs a handler function');
        void port.register({ kind: 'schedule', name, cron }, (payload) =>
          handler(payload as { occurrence: string }),
        );
      },
    }),
    files: Object.freeze({
      read: async (path: string) => (await port.call('files.read', [path])) as string,
      write: async (path: string, data: string) => {
        await port.call('files.write', [path, data]);
      },
      append: async (path: string, data: string) => {
        await port.call('files.append', [path, data]);
      },
      delete: async (path: string) => (await port.call('files.delete', [path])) as boolean,
    }),
    http: Object.freeze({
      fetch: async (url: string, init: PluginFetchInit = {}) =>
        (await op('http:fetch', 'http.fetch', 'http.fetch', [url, init])) as PluginFetchResponse,
    }),
    logger: Object.freeze({
      debug: (message: string, fields?: Record<string, unknown>) =>
        port.log('debug', String(message), fields),
      info: (message: string, fields?: Record<string, unknown>) => port.log('info', String(message), fields),
      warn: (message: string, fields?: Record<string, unknown>) => port.log('warn', String(message), fields),
      error: (message: string, fields?: Record<string, unknown>) =>
        port.log('error', String(message), fields),
    }),
    health: Object.freeze({
      report: (status: string, details?: Record<string, unknown>) => port.health(status, details),
    }),
  }) as PluginContext;
}
