/**
 * What passes between a plugin's realm (its own module, inline or in a worker process) and the platform: plain,
 * structured-clonable data only, so the same interface works across a process boundary.
 */

export type RouteAccess = 'authenticated' | 'public' | { permission: string };

/** Something a plugin registers during (or after) setup; the platform calls its handler with one payload. */
export type Registration =
  | { kind: 'route'; method: string; path: string; access: RouteAccess }
  | { kind: 'subscription'; patterns: string[]; name: string }
  | { kind: 'task'; type: string }
  | { kind: 'schedule'; name: string; cron: string }
  | { kind: 'hook' };

/** Calls from the plugin into the platform, each checked against the manifest's permissions. */
export type CapabilityOp =
  | 'events.emit'
  | 'cache.get'
  | 'cache.set'
  | 'cache.delete'
  | 'cache.clear'
  | 'storage.get'
  | 'storage.set'
  | 'storage.delete'
  | 'storage.keys'
  | 'tasks.start'
  | 'files.read'
  | 'files.write'
  | 'files.append'
  | 'files.delete'
  | 'http.fetch';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * An error as it crosses the boundary. `client` marks `ctx.routes.error(...)`: an answer, not a failure.
 * `recorded` marks a failure the platform has already counted (a call outside the manifest's permissions), so
 * the handler that lets it through is not counted a second time for it.
 */
export interface WireError {
  message: string;
  name?: string;
  client?: { code: string; details?: Record<string, unknown> };
  recorded?: true;
}

/** The platform side of a plugin's `ctx`. */
export interface ContextPort {
  call(op: CapabilityOp, args: unknown[]): Promise<unknown>;
  /** Registers a handler; resolves once the platform has it (setup waits for every registration). */
  register(registration: Registration, handler: (payload: unknown) => unknown): Promise<void>;
  log(level: LogLevel, message: string, fields: Record<string, unknown> | undefined): void;
  health(status: string, details: Record<string, unknown> | undefined): void;
  /** A call outside the granted permissions (it throws in the plugin as well). */
  denied(permission: string, what: string): void;
}

/** The facts a plugin's realm needs to build its `ctx`. */
export interface RealmInfo {
  id: string;
  version: string;
  /** The plugin's own folder for files (`<storage.data_dir>/plugin-data/<id>`). */
  dataDir: string;
  permissions: string[];
  config: Record<string, unknown>;
}

const CLIENT_ERROR = Symbol.for('platform.plugin.client-error');

/** The error `ctx.routes.error(...)` makes. */
export function clientError(code: string, message: string, details?: Record<string, unknown>): Error {
  const err = new Error(message);
  Object.defineProperty(err, CLIENT_ERROR, { value: { code, ...(details ? { details } : {}) } });
  return err;
}

const RECORDED = Symbol.for('platform.plugin.recorded-failure');

/** An error for a failure of the plugin that has already been counted and logged (see `isRecorded`). */
export function recordedFailure(message: string, name = 'Error'): Error {
  const err = new Error(message);
  err.name = name;
  return markRecorded(err);
}

/** Marks `err` as a failure already counted (see `isRecorded`), and returns it. */
export function markRecorded<E extends Error>(err: E): E {
  Object.defineProperty(err, RECORDED, { value: true });
  return err;
}

/** Whether `err` (or an error it was caused by) is a failure already counted: it must not be counted again. */
export function isRecorded(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if ((e as unknown as Record<symbol, unknown>)[RECORDED] === true) return true;
    e = e.cause;
  }
  return false;
}

export function toWireError(err: unknown): WireError {
  if (err instanceof Error) {
    const client = (err as unknown as Record<symbol, WireError['client']>)[CLIENT_ERROR];
    return {
      message: err.message,
      name: err.name,
      ...(client ? { client } : {}),
      ...(isRecorded(err) ? { recorded: true as const } : {}),
    };
  }
  return { message: typeof err === 'string' ? err : 'the plugin threw a non-Error value' };
}

/** The error an error from the wire becomes in the realm that receives it, keeping its `recorded` mark. */
export function fromWireError(wire: WireError): Error {
  if (wire.recorded) return recordedFailure(wire.message, wire.name ?? 'Error');
  return Object.assign(new Error(wire.message), { name: wire.name ?? 'Error' });
}

/** The error the platform side sees for a wire error; `client` and `recorded` are kept on it. */
export class PluginCallError extends Error {
  constructor(readonly wire: WireError) {
    super(wire.message);
    this.name = 'PluginCallError';
    if (wire.recorded) Object.defineProperty(this, RECORDED, { value: true });
  }
}
