/**
 * The plugin SDK: the types of the `ctx` a plugin's `setup` receives, and `definePlugin`, which only gives a
 * plugin written in TypeScript its types. Exported by the package as `platform/sdk`; nothing here depends on
 * the rest of the platform, so a plugin can be type-checked (and bundled) against it alone.
 *
 * @example
 * ```ts
 * import { definePlugin } from 'platform/sdk';
 *
 * export default definePlugin<{ greeting: string }>({
 *   setup(ctx) {
 *     ctx.routes.get('/hello/:name', (req) => ({ message: `${ctx.config.greeting}, ${req.params.name}` }));
 *     ctx.logger.info('hello plugin ready');
 *   },
 * });
 * ```
 */

/** A capability a plugin asks for in its manifest's `permissions` (`area:*` grants a whole area). */
export type PluginPermissionName =
  | 'events:emit'
  | 'events:subscribe'
  | 'http:routes'
  | 'http:fetch'
  | 'cache:use'
  | 'storage:use'
  | 'tasks:register';

export type PluginHealthStatus = 'healthy' | 'degraded' | 'unhealthy';

/** Error codes a route may answer with through `ctx.routes.error` (the platform's catalogue). */
export type PluginErrorCode =
  | 'VALIDATION_ERROR'
  | 'RESOURCE_NOT_FOUND'
  | 'RESOURCE_CONFLICT'
  | 'AUTHORIZATION_DENIED';

/** What a route handler receives: plain data, the same whether the plugin runs inline or in a worker. */
export interface PluginRequest {
  method: string;
  /** The path below the plugin's prefix, e.g. `/hello/ada` for `/api/v1/ext/greeter/hello/ada`. */
  path: string;
  params: Record<string, string>;
  query: Record<string, string | string[]>;
  /** Lower-case names; credentials (authorization, x-api-key, cookie) are left out. */
  headers: Record<string, string>;
  /** The parsed JSON body, or undefined. */
  body: unknown;
  /** The authenticated caller, or null on a public route without credentials. */
  user: { id: string; username: string; roles: string[]; permissions: string[] } | null;
  request_id: string;
  ip: string;
}

/** A response with a chosen status and headers (`ctx.routes.respond`). */
export interface PluginResponse {
  readonly __platform_response: true;
  status: number;
  data: unknown;
  headers: Record<string, string>;
}

/**
 * Returning a value answers 200 with it as the envelope's `data`; return `ctx.routes.respond(...)` for another
 * status, throw `ctx.routes.error(...)` for a client error. Any other throw is a plugin failure (500).
 */
export type RouteHandler = (request: PluginRequest) => unknown;

export interface RouteOptions {
  /** Who may call: an authenticated caller (the default), anyone, or a caller holding a permission. */
  access?: 'authenticated' | 'public' | { permission: string };
}

export interface PluginRoutes {
  get(path: string, handler: RouteHandler, options?: RouteOptions): void;
  post(path: string, handler: RouteHandler, options?: RouteOptions): void;
  put(path: string, handler: RouteHandler, options?: RouteOptions): void;
  patch(path: string, handler: RouteHandler, options?: RouteOptions): void;
  delete(path: string, handler: RouteHandler, options?: RouteOptions): void;
  /**
   * Runs before each of this plugin's route handlers (never for other plugins' routes or the platform's), in
   * the order added. Returning nothing goes on; returning a value (or `respond(...)`) answers with it and skips
   * the handler; throwing `error(...)` refuses the request.
   *
   * @example
   * ```ts
   * ctx.routes.hook((req) => {
   *   if (req.headers['x-shop-token'] !== ctx.config.token) throw ctx.routes.error('AUTHORIZATION_DENIED', 'bad token');
   * });
   * ```
   */
  hook(handler: RouteHandler): void;
  respond(status: number, data?: unknown, headers?: Record<string, string>): PluginResponse;
  /** An error to throw: answered in the platform's error envelope with this code, not counted as a failure. */
  error(code: PluginErrorCode, message: string, details?: Record<string, unknown>): Error;
}

/** An event as plugin subscribers receive it (the body a webhook gets). */
export interface PluginEvent {
  event_id: string;
  event_type: string;
  source: string;
  timestamp: string;
  priority: number;
  sequence: number;
  data: Record<string, unknown>;
  /**
   * `correlation_id`, and the W3C trace context of this call: `traceparent` (a span of the call, in the emitter's
   * trace) and `tracestate` when the emitter sent one (docs/tracing.md).
   */
  metadata: Record<string, unknown>;
}

export interface DeliveryInfo {
  /** The same across retries of one delivery: use it to handle a delivery once. */
  delivery_id: string;
  attempt: number;
}

/** Resolving is success; throwing is a failed delivery, retried by the subscription's retry policy. */
export type EventHandler = (event: PluginEvent, delivery: DeliveryInfo) => unknown;

export interface PluginEvents {
  /**
   * Emits an event with source `plugin:<id>`; its type must match the manifest's `events.emits`. `priority` is an
   * integer from 1 to 10 (default 5); what `POST /api/v1/events` would refuse throws, and nothing is stored.
   */
  emit(
    type: string,
    data?: Record<string, unknown>,
    options?: { priority?: number },
  ): Promise<{ event_id: string; timestamp: string }>;
  /**
   * A durable subscription (`delivery_method: plugin`) fed from the outbox: events are delivered at least once,
   * with retries. `name` (default: the patterns joined) keeps it the same subscription across restarts.
   */
  subscribe(patterns: string | string[], handler: EventHandler, options?: { name?: string }): Promise<void>;
}

/** The plugin's own namespace of the platform cache (`plugin_cache:<id>`). Values are JSON. */
export interface PluginCache {
  get<T = unknown>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown, ttlSeconds?: number): Promise<void>;
  delete(key: string): Promise<boolean>;
  /** Removes keys matching a glob (default all); resolves to how many. */
  clear(pattern?: string): Promise<number>;
}

/** Persistent key-value storage of the plugin, kept across restarts and updates, removed on uninstall. */
export interface PluginStorage {
  get<T = unknown>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<boolean>;
  /** Keys, sorted, optionally only those starting with `prefix`. */
  keys(prefix?: string): Promise<string[]>;
}

/**
 * Files in the plugin's own data folder (`ctx.plugin.dataDir`). Paths are relative to it; an absolute path, a
 * `..` that leaves it, or a symbolic link leading out is refused (the call throws), whichever way the plugin
 * runs. Folders on the way are made. Needs no permission: the folder is the plugin's own.
 */
export interface PluginFiles {
  /** The file's content as UTF-8 text. */
  read(path: string): Promise<string>;
  /** Replaces the file's content (at most 16 MiB a call). */
  write(path: string, data: string): Promise<void>;
  /** Appends to the file, creating it when missing (at most 16 MiB a call). */
  append(path: string, data: string): Promise<void>;
  /** Removes the file; resolves to whether there was one. */
  delete(path: string): Promise<boolean>;
}

/** A request of `ctx.http.fetch`. */
export interface PluginFetchInit {
  /** GET (default), HEAD, POST, PUT, PATCH, DELETE or OPTIONS. */
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The whole request's limit: default 10 000, at most 60 000. */
  timeout_ms?: number;
}

/** The answer of `ctx.http.fetch`, whatever its status. */
export interface PluginFetchResponse {
  status: number;
  /** Whether the status is 2xx. */
  ok: boolean;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The body as UTF-8 text (at most 1 MiB; a longer one fails the call). */
  body: string;
}

/** Outgoing HTTP requests of the plugin (permission `http:fetch`). */
export interface PluginHttp {
  /**
   * Sends a request through the platform's guarded connector, the one webhooks use: unless
   * `webhooks.allow_private_targets` is on, loopback, private, link-local and cloud-metadata addresses are
   * refused (by every address the name resolves to and by the address connected). Redirects are never
   * followed: a 3xx is answered as it is. A refusal, a network error or the timeout rejects with an error that
   * names the method, the target's host and the cause.
   *
   * @example
   * ```ts
   * const res = await ctx.http.fetch(ctx.config.url, {
   *   method: 'POST',
   *   headers: { 'content-type': 'application/json' },
   *   body: JSON.stringify({ text: 'deployed' }),
   *   timeout_ms: 5000,
   * });
   * if (!res.ok) throw new Error(`the chat answered ${res.status}`);
   * ```
   */
  fetch(url: string, init?: PluginFetchInit): Promise<PluginFetchResponse>;
}

export interface PluginTask {
  task_id: string;
  /** The full type, `<plugin id>:<type>`. */
  type: string;
  details: Record<string, unknown>;
}

export interface PluginTasks {
  /** Registers the handler of task type `<plugin id>:<type>`; what it returns becomes the task's result. */
  register(type: string, handler: (task: PluginTask) => unknown): void;
  /** Starts a task of a type this plugin registered; see it at `GET /api/v1/tasks/{task_id}`. */
  start(type: string, details?: Record<string, unknown>): Promise<{ task_id: string }>;
  /**
   * Runs `handler` on a cron expression (5 fields, or 6 with seconds first; UTC). In a cluster exactly one
   * instance runs each occurrence.
   */
  schedule(name: string, cron: string, handler: (run: { occurrence: string }) => unknown): void;
}

export interface PluginLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface PluginHealth {
  /** Sets the health the plugin reports; the platform's own view (recent failures) can only make it worse. */
  report(status: PluginHealthStatus, details?: Record<string, unknown>): void;
}

/**
 * What `setup` receives. Every capability checks the manifest's `permissions`; a call outside them throws
 * (and is recorded as a plugin error).
 */
export interface PluginContext<Config = Record<string, unknown>> {
  readonly plugin: {
    readonly id: string;
    readonly version: string;
    readonly permissions: readonly string[];
    /**
     * A folder of the plugin's own for files (`<storage.data_dir>/plugin-data/<id>`, on this machine), kept across
     * restarts and updates and removed on uninstall. Use `ctx.files` to reach it (confined to it), and
     * `ctx.storage` for what every instance must see. A worker plugin's process may read and write no other
     * folder (its package folder is readable too).
     */
    readonly dataDir: string;
  };
  /** The configuration, validated against `config_schema` with its defaults (secrets unmasked). */
  readonly config: Readonly<Config>;
  readonly events: PluginEvents;
  readonly routes: PluginRoutes;
  readonly cache: PluginCache;
  readonly storage: PluginStorage;
  readonly tasks: PluginTasks;
  readonly files: PluginFiles;
  readonly http: PluginHttp;
  readonly logger: PluginLogger;
  readonly health: PluginHealth;
}

/** The default export of a plugin's main module. */
export interface PluginDefinition<Config = Record<string, unknown>> {
  setup(ctx: PluginContext<Config>): void | Promise<void>;
  /** Called when the plugin is disabled, updated or uninstalled, and when the platform stops. */
  teardown?(): void | Promise<void>;
}

/** Returns the definition unchanged: it exists so a TypeScript plugin gets the `ctx` types. */
export function definePlugin<Config = Record<string, unknown>>(
  definition: PluginDefinition<Config>,
): PluginDefinition<Config> {
  return definition;
}
