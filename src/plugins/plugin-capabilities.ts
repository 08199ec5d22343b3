import type { CacheService } from '../cache/cache-service.js';
import type { EventService } from '../events/event-service.js';
import { compilePatterns } from '../events/pattern-matcher.js';
import { AppError } from '../http/app-error.js';
import type { Scheduler } from '../tasks/scheduler.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import { ConsumerUnavailable } from '../webhooks/plugin-consumers.js';
import type { PluginSubscriptions } from '../webhooks/plugin-subscriptions.js';
import { PluginFiles } from './plugin-files.js';
import type { PlatformSide } from './plugin-host.js';
import type { PluginHttpClient } from './plugin-http.js';
import { grants, type Manifest, type PluginPermission } from './plugin-manifest.js';
import type { PluginRouteTable, RouteMethod } from './plugin-route-table.js';
import type { PluginStorageStore } from './plugin-storage-store.js';
import { type LogLevel, type Registration, type RouteAccess, recordedFailure } from './plugin-wire.js';

/** The platform services a plugin's capabilities reach. */
export interface CapabilityServices {
  events: EventService;
  cache: CacheService;
  storage: PluginStorageStore;
  tasks: TaskRunner;
  scheduler: Scheduler;
  subscriptions: PluginSubscriptions;
  /** Outgoing requests (`ctx.http.fetch`), through the webhooks' guarded connector. */
  http: PluginHttpClient;
}

/** What the capabilities need of the plugin they serve (its runtime on this instance). */
export interface CapabilityHost {
  readonly id: string;
  readonly manifest: Manifest;
  /** The plugin's own folder for files: `ctx.files` reaches nothing else. */
  readonly dataDir: string;
  readonly routes: PluginRouteTable;
  /** Runs a handler of the plugin with its accounting (timeouts, failures, statistics). */
  guard(kind: 'event' | 'task' | 'schedule', what: string, run: () => Promise<unknown>): Promise<unknown>;
  isActive(): boolean;
  /** Whether the plugin runs once its setup has finished (waits while it is still in setup). */
  whenStarted(): Promise<boolean>;
  fail(message: string): void;
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
  report(status: string, details: Record<string, unknown> | undefined): void;
  /** Undo work on stop: remove consumers, unschedule jobs. */
  onStop(fn: () => void): void;
  readonly subscriptionNames: Set<string>;
  readonly taskTypes: Set<string>;
}

const TASK_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

/**
 * The platform side of a plugin's ctx: every call and registration is checked against the manifest's
 * permissions here (authoritative: a worker plugin could skip the checks of its own realm), its arguments
 * are validated, and only then does it reach the platform's services, always as the plugin itself.
 */
export function createCapabilities(host: CapabilityHost, services: CapabilityServices): PlatformSide {
  const { id, manifest } = host;
  const emits = compilePatterns(manifest.events.emits.length > 0 ? manifest.events.emits : []);
  const cache = services.cache.namespace(`plugin_cache:${id}`);
  const files = new PluginFiles(host.dataDir);
  const need = (permission: PluginPermission, what: string) => {
    if (grants(manifest, permission)) return;
    const message = `ctx.${what} needs the permission '${permission}', which the plugin's manifest does not grant`;
    host.fail(message);
    throw recordedFailure(message);
  };
  const str = (v: unknown, what: string): string => {
    if (typeof v !== 'string') throw new TypeError(`${what} must be a string`);
    return v;
  };

  const call: PlatformSide['call'] = async (op, args) => {
    switch (op) {
      case 'events.emit': {
        need('events:emit', 'events.emit');
        const [type, data, options, trace] = args as [
          unknown,
          unknown,
          { priority?: unknown } | undefined,
          { traceparent?: unknown; tracestate?: unknown } | undefined,
        ];
        const eventType = str(type, 'the event type');
        if (manifest.events.emits.length === 0 || !emits(eventType)) {
          const message = `the event type '${eventType}' is not among the manifest's events.emits (${manifest.events.emits.join(', ') || 'none'})`;
          host.fail(message);
          throw recordedFailure(message);
        }
        if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) {
          throw new TypeError('event data must be an object');
        }
        // Checked by the emit itself (1–10), as for `POST /api/v1/events`.
        const priority = options?.priority ?? undefined;
        const row = await services.events.emit(
          {
            event_type: eventType,
            source: `plugin:${id}`,
            data: (data ?? {}) as Record<string, unknown>,
            ...(priority === undefined ? {} : { priority: priority as number }),
          },
          {
            emitter: undefined,
            requestId: '',
            userAgent: `plugin:${id}`,
            ipAddress: '',
            // The trace of the event whose handler emits (checked by the emit as a request's headers are).
            traceparent: typeof trace?.traceparent === 'string' ? trace.traceparent : undefined,
            tracestate: typeof trace?.tracestate === 'string' ? trace.tracestate : undefined,
          },
        );
        return { event_id: row.event_id, timestamp: row.timestamp };
      }
      case 'cache.get':
        need('cache:use', 'cache.get');
        return cache.get(str(args[0], 'the key'));
      case 'cache.set': {
        need('cache:use', 'cache.set');
        const ttl = args[2];
        await cache.set(
          str(args[0], 'the key'),
          args[1],
          typeof ttl === 'number' && ttl > 0 ? ttl : undefined,
        );
        return null;
      }
      case 'cache.delete':
        need('cache:use', 'cache.delete');
        return cache.delete(str(args[0], 'the key'));
      case 'cache.clear':
        need('cache:use', 'cache.clear');
        return cache.clear(typeof args[0] === 'string' ? args[0] : undefined);
      case 'storage.get':
        need('storage:use', 'storage.get');
        return services.storage.get(id, str(args[0], 'the key'));
      case 'storage.set':
        need('storage:use', 'storage.set');
        await services.storage.set(id, str(args[0], 'the key'), args[1]);
        return null;
      case 'storage.delete':
        need('storage:use', 'storage.delete');
        return services.storage.delete(id, str(args[0], 'the key'));
      case 'storage.keys':
        need('storage:use', 'storage.keys');
        return services.storage.keys(id, typeof args[0] === 'string' ? args[0] : '');
      case 'tasks.start': {
        need('tasks:register', 'tasks.start');
        const type = str(args[0], 'the task type');
        if (!host.taskTypes.has(type))
          throw new Error(`the plugin has not registered the task type '${type}'`);
        const details = args[1] && typeof args[1] === 'object' ? (args[1] as Record<string, unknown>) : {};
        const task = await services.tasks.start(`${id}:${type}`, details);
        return { task_id: task.id };
      }
      case 'files.read':
        return files.read(args[0]);
      case 'files.write':
        await files.write(args[0], args[1], false);
        return null;
      case 'files.append':
        await files.write(args[0], args[1], true);
        return null;
      case 'files.delete':
        return files.delete(args[0]);
      case 'http.fetch':
        need('http:fetch', 'http.fetch');
        return services.http.fetch(args[0], args[1]);
      default:
        throw new Error(`unknown capability '${String(op)}'`);
    }
  };

  const register: PlatformSide['register'] = async (registration: Registration, invoke) => {
    switch (registration.kind) {
      case 'route': {
        need('http:routes', `routes.${String(registration.method).toLowerCase()}`);
        host.routes.add({
          method: registration.method as RouteMethod,
          path: str(registration.path, 'the route path'),
          access: checkAccess(registration.access),
          invoke,
        });
        return;
      }
      case 'hook':
        need('http:routes', 'routes.hook');
        host.routes.hooks.push(invoke);
        return;
      case 'subscription': {
        need('events:subscribe', 'events.subscribe');
        const patterns = Array.isArray(registration.patterns)
          ? registration.patterns.map((p) => str(p, 'a pattern'))
          : [];
        const name = str(registration.name, 'the subscription name').slice(0, 200);
        const { unsubscribe } = await services.subscriptions.subscribe(
          id,
          { name, eventPatterns: patterns },
          async (delivery) => {
            // A delivery reaching the plugin in setup waits for it; one reaching it stopped (an update, a
            // disable) or failed to start here goes back to the outbox untried, for where it runs.
            if (!(await host.whenStarted()))
              throw new ConsumerUnavailable(`the plugin '${id}' is not running here`);
            await host.guard('event', `the event handler of '${name}'`, () =>
              invoke({
                event: delivery.event,
                delivery: { delivery_id: delivery.deliveryId, attempt: delivery.attempt },
              }),
            );
          },
        );
        host.subscriptionNames.add(name);
        host.onStop(unsubscribe);
        return;
      }
      case 'task': {
        need('tasks:register', 'tasks.register');
        const type = str(registration.type, 'the task type');
        if (!TASK_NAME.test(type)) throw new Error(`task types match ${TASK_NAME.source}: '${type}'`);
        const full = `${id}:${type}`;
        services.tasks.registerType(full, async (task) => {
          // A task started during setup waits for it; `guard` refuses a plugin that is not running.
          if (!(await host.whenStarted())) throw new Error(`the plugin '${id}' is not active`);
          const result = await host.guard('task', `the task handler of '${type}'`, () =>
            invoke({ task_id: task.taskId, type: full, details: { ...task.details } }),
          );
          if (result === undefined || result === null) return undefined;
          return typeof result === 'object' && !Array.isArray(result)
            ? (result as Record<string, unknown>)
            : { value: result };
        });
        host.taskTypes.add(type);
        return;
      }
      case 'schedule': {
        need('tasks:register', 'tasks.schedule');
        const name = str(registration.name, 'the schedule name');
        if (!TASK_NAME.test(name)) throw new Error(`schedule names match ${TASK_NAME.source}: '${name}'`);
        const job = `plugin:${id}:${name}`;
        // Registered first: a job refused for its expression is forgotten by the scheduler when the plugin stops.
        host.onStop(() => services.scheduler.unschedule(job));
        services.scheduler.schedule(
          job,
          str(registration.cron, 'the cron expression'),
          async ({ occurrence }) => {
            if (!(await host.whenStarted())) return;
            await host.guard('schedule', `the scheduled job '${name}'`, () =>
              invoke({ occurrence: occurrence.toISOString() }),
            );
          },
          { description: `Plugin ${id}: ${name}` },
        );
        return;
      }
      default:
        throw new Error('unknown registration');
    }
  };

  return {
    call: (op, args) =>
      call(op, args).catch((err: unknown) => {
        // Platform-side refusals (bad input, limits) reach the plugin as plain errors with their message.
        throw err instanceof AppError ? new Error(err.message) : err;
      }),
    register,
    log: (level, message, fields) => host.log(level, message, fields),
    health: (status, details) => host.report(status, details),
    denied: (permission, what) =>
      host.fail(
        `ctx.${what} needs the permission '${permission}', which the plugin's manifest does not grant`,
      ),
  };
}

function checkAccess(access: unknown): RouteAccess {
  if (access === 'authenticated' || access === 'public') return access;
  if (
    access &&
    typeof access === 'object' &&
    typeof (access as { permission?: unknown }).permission === 'string'
  ) {
    return { permission: (access as { permission: string }).permission };
  }
  throw new Error(
    `route access is 'authenticated', 'public' or { permission }, not ${JSON.stringify(access)}`,
  );
}
