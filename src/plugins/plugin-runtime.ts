import { performance } from 'node:perf_hooks';
import { AppError } from '../http/app-error.js';
import type { ErrorCode } from '../http/error-catalogue.js';
import { InlineHost } from './inline-host.js';
import { type CapabilityServices, createCapabilities } from './plugin-capabilities.js';
import type { PluginHost } from './plugin-host.js';
import { withTimeout } from './plugin-host.js';
import type { Manifest } from './plugin-manifest.js';
import { type PluginRoute, PluginRouteTable } from './plugin-route-table.js';
import { PluginStats } from './plugin-stats.js';
import { isRecorded, type LogLevel, PluginCallError } from './plugin-wire.js';
import type { PluginRequest } from './sdk.js';
import { WorkerHost } from './worker-host.js';

export type PluginHealth = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';

const REPORTABLE = ['healthy', 'degraded', 'unhealthy'];
const CLIENT_CODES: readonly ErrorCode[] = [
  'VALIDATION_ERROR',
  'RESOURCE_NOT_FOUND',
  'RESOURCE_CONFLICT',
  'AUTHORIZATION_DENIED',
];
// A failure within this window keeps the plugin's health at least `degraded`.
const DEGRADED_MS = 5 * 60_000;
// Response headers a plugin may not set: the platform owns framing, content type and correlation.
const RESERVED_HEADERS = new Set([
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'x-request-id',
]);

export interface RuntimeOptions {
  id: string;
  version: string;
  manifest: Manifest;
  dir: string;
  /** The plugin's own folder for files (ctx.plugin.dataDir). */
  dataDir: string;
  sha256: string;
  config: Record<string, unknown>;
  services: CapabilityServices;
  timeoutMs: () => number;
  workerMemoryMb: number;
  log: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /** Every failure of the plugin (it is already counted and logged). */
  onFailure: (runtime: PluginRuntime, message: string) => void;
  /** The worker died or was terminated: the plugin no longer runs here. */
  onCrash: (runtime: PluginRuntime, reason: string) => void;
}

/** The result of a plugin's route: what the dispatcher sends. */
export interface RouteResult {
  status: number;
  data: unknown;
  headers: Record<string, string>;
}

/**
 * One plugin loaded on this instance: its code (inline or in a worker), its route table, the consumers and
 * jobs it registered, its health and its statistics. Every call into the plugin goes through `guard` (or
 * `handle` for routes), which bounds it in time, counts it, and turns a throw into a recorded failure.
 */
export class PluginRuntime {
  readonly routes = new PluginRouteTable();
  readonly stats = new PluginStats();
  readonly subscriptionNames = new Set<string>();
  readonly taskTypes = new Set<string>();
  private readonly host: PluginHost;
  private state: 'starting' | 'active' | 'stopped' | 'crashed' = 'starting';
  private reported: { status: string; details: Record<string, unknown> | undefined } | undefined;
  private readonly cleanups: (() => void)[] = [];
  private lastError: string | undefined;
  // Settles when `start` has finished, whether setup succeeded or not.
  private readonly startSettled: Promise<void>;
  private settleStart: () => void = () => {};

  constructor(private readonly options: RuntimeOptions) {
    this.startSettled = new Promise<void>((resolve) => {
      this.settleStart = resolve;
    });
    const info = {
      id: options.id,
      version: options.version,
      permissions: options.manifest.permissions,
      dataDir: options.dataDir,
      config: options.config,
    };
    const side = createCapabilities(this, options.services);
    this.host =
      options.manifest.isolation === 'worker'
        ? new WorkerHost({
            dir: options.dir,
            main: options.manifest.main,
            dataDir: options.dataDir,
            info,
            side,
            timeoutMs: options.timeoutMs,
            memoryMb: options.workerMemoryMb,
            onCrash: (reason) => this.crashed(reason),
          })
        : new InlineHost({
            dir: options.dir,
            main: options.manifest.main,
            sha256: options.sha256,
            info,
            side,
            timeoutMs: options.timeoutMs,
          });
  }

  get id(): string {
    return this.options.id;
  }

  get version(): string {
    return this.options.version;
  }

  get dataDir(): string {
    return this.options.dataDir;
  }

  get manifest(): Manifest {
    return this.options.manifest;
  }

  get isolation(): 'inline' | 'worker' {
    return this.host.isolation;
  }

  get error(): string | undefined {
    return this.lastError;
  }

  isActive(): boolean {
    return this.state === 'active';
  }

  /**
   * Whether the plugin runs, once its setup has finished: a delivery, task or scheduled job that reaches a plugin
   * still in `setup` (it subscribed or registered, then went on setting up) waits for it instead of failing.
   */
  async whenStarted(): Promise<boolean> {
    if (this.state === 'starting') await this.startSettled;
    return this.isActive();
  }

  /** Loads the module and runs setup. A failure is recorded, the half-started plugin is stopped, and it rethrows. */
  async start(): Promise<void> {
    try {
      await this.host.start();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.state = 'crashed';
      this.runCleanups();
      this.settleStart();
      await this.host.stop().catch(() => {});
      this.recordFailure(`setup failed: ${message}`);
      throw new Error(message);
    }
    if (this.state === 'starting') this.state = 'active';
    this.settleStart();
  }

  /** Runs teardown and releases everything the plugin registered; never throws (a failing teardown is logged). */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    const wasRunning = this.state !== 'crashed';
    this.state = 'stopped';
    this.runCleanups();
    if (!wasRunning) return;
    try {
      await this.host.stop();
    } catch (err) {
      this.options.log('warn', `teardown failed: ${(err as Error).message}`);
    }
  }

  /** Runs one of the plugin's route handlers for a request. */
  async handle(route: PluginRoute, request: PluginRequest): Promise<RouteResult> {
    const started = performance.now();
    try {
      let value: unknown;
      for (const hook of this.routes.hooks) {
        value = await this.bounded(`a route hook (${route.method} ${route.path})`, () => hook(request));
        if (value !== undefined && value !== null) break;
      }
      if (value === undefined || value === null) {
        value = await this.bounded(`the route ${route.method} ${route.path}`, () => route.invoke(request));
      }
      const result = toRouteResult(value);
      checkSerializable(result.data);
      this.stats.request(performance.now() - started);
      return result;
    } catch (err) {
      const client = err instanceof PluginCallError ? err.wire.client : undefined;
      if (client) {
        this.stats.request(performance.now() - started);
        const code = CLIENT_CODES.includes(client.code as ErrorCode)
          ? (client.code as ErrorCode)
          : 'VALIDATION_ERROR';
        throw new AppError(
          code,
          err instanceof Error ? err.message : undefined,
          client.details ? { details: client.details } : {},
        );
      }
      this.stats.request(performance.now() - started);
      // One failed request is one failure: a refusal the capabilities already counted is not counted again.
      if (!isRecorded(err))
        this.recordFailure(`the route ${route.method} ${route.path} failed: ${(err as Error).message}`);
      throw new AppError(
        'INTERNAL_ERROR',
        `The plugin '${this.id}' failed to handle the request (request ${request.request_id})`,
        {
          details: { plugin_id: this.id },
        },
      );
    }
  }

  /** Runs an event, task or scheduled handler of the plugin with its accounting; rethrows its failure. */
  async guard(
    kind: 'event' | 'task' | 'schedule',
    what: string,
    run: () => Promise<unknown>,
  ): Promise<unknown> {
    if (!(await this.whenStarted())) throw new Error(`the plugin '${this.id}' is not active`);
    try {
      const value = await this.bounded(what, run);
      if (kind === 'event') this.stats.delivery();
      else this.stats.taskRun();
      return value;
    } catch (err) {
      if (kind === 'event') this.stats.delivery();
      else this.stats.taskRun();
      if (!isRecorded(err)) this.recordFailure(`${what} failed: ${(err as Error).message}`);
      throw err;
    }
  }

  /** A failure of the plugin: counted, logged, and passed on (the manager disables it after too many). */
  fail(message: string): void {
    this.recordFailure(message);
  }

  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    this.options.log(level, message, fields);
  }

  report(status: string, details: Record<string, unknown> | undefined): void {
    if (!REPORTABLE.includes(status)) {
      this.options.log('warn', `health.report: '${status}' is not one of ${REPORTABLE.join(', ')}`);
      return;
    }
    this.reported = { status, details };
  }

  onStop(fn: () => void): void {
    this.cleanups.push(fn);
  }

  /** The reported health, made worse by failures in the last five minutes; unknown unless running. */
  health(): PluginHealth {
    if (this.state === 'crashed') return 'unhealthy';
    if (this.state !== 'active') return 'unknown';
    const reported = (this.reported?.status ?? 'healthy') as PluginHealth;
    if (reported === 'unhealthy') return 'unhealthy';
    return this.stats.failedWithin(DEGRADED_MS) ? 'degraded' : reported;
  }

  healthDetails(): Record<string, unknown> | undefined {
    return this.reported?.details;
  }

  memoryMb(): Promise<number | null> {
    return this.host.memoryMb();
  }

  private bounded(what: string, run: () => Promise<unknown>): Promise<unknown> {
    // A worker's own call timeout terminates it; an inline plugin can only be given up on.
    return this.host.isolation === 'worker' ? run() : withTimeout(run(), this.options.timeoutMs(), what);
  }

  private recordFailure(message: string): void {
    this.lastError = message;
    this.stats.failure();
    this.options.log('error', message);
    this.options.onFailure(this, message);
  }

  private crashed(reason: string): void {
    const wasActive = this.state === 'active';
    this.state = 'crashed';
    this.lastError = reason;
    this.runCleanups();
    // During start the failure is reported by start() itself.
    if (wasActive) {
      this.stats.failure();
      this.options.log('error', reason);
      this.options.onCrash(this, reason);
    }
  }

  private runCleanups(): void {
    for (const fn of this.cleanups.splice(0)) {
      try {
        fn();
      } catch {
        // Undoing a registration must not stop the others from being undone.
      }
    }
  }
}

/**
 * Throws when the data a route returned cannot be sent as JSON (a circular object, a BigInt, a throwing
 * `toJSON`), so it is the plugin's failure, answered and counted like a throw, not the platform's.
 */
function checkSerializable(data: unknown): void {
  try {
    JSON.stringify(data);
  } catch (err) {
    throw new Error(`the route returned data that cannot be sent as JSON: ${(err as Error).message}`);
  }
}

function toRouteResult(value: unknown): RouteResult {
  if (
    value &&
    typeof value === 'object' &&
    (value as { __platform_response?: unknown }).__platform_response === true
  ) {
    const r = value as { status?: unknown; data?: unknown; headers?: unknown };
    const status = Number(r.status);
    if (!Number.isInteger(status) || status < 200 || status > 299) {
      throw new Error(
        `respond() takes a 2xx status (use routes.error() for client errors), not ${String(r.status)}`,
      );
    }
    const headers: Record<string, string> = {};
    if (r.headers && typeof r.headers === 'object') {
      for (const [k, v] of Object.entries(r.headers as Record<string, unknown>)) {
        const name = k.toLowerCase();
        const text = String(v);
        if (
          !RESERVED_HEADERS.has(name) &&
          /^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name) &&
          !/[\r\n\0]/.test(text)
        ) {
          headers[name] = text;
        }
      }
    }
    return { status, data: r.data ?? null, headers };
  }
  return { status: 200, data: value ?? null, headers: {} };
}
