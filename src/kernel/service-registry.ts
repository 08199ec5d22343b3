import { performance } from 'node:perf_hooks';
import { AppError } from '../http/app-error.js';
import { extend } from './extend.js';
import type { PlatformService, ServiceHealth } from './service.js';

export type ServiceState = 'stopped' | 'starting' | 'running' | 'stopping' | 'failed';

interface Entry {
  service: PlatformService;
  state: ServiceState;
  startedAt: number | undefined;
  errors: Map<string, { timestamp: string; error: string; count: number }>;
}

/** Holds the platform's services, orders their lifecycle, and records their errors. */
export class ServiceRegistry {
  private readonly entries = new Map<string, Entry>();
  private readonly checking = new Map<string, Promise<ServiceHealth>>();
  private readonly recent = new Map<string, { at: number; health: ServiceHealth }>();
  private changes = 0;
  private order: string[] | undefined;

  /**
   * @param healthMaxAgeMs how long a finished health check answers for its service: under load every
   *   /status request ran every service's checks (database queries, file-system probes), most of its cost.
   */
  constructor(private readonly healthMaxAgeMs = 1000) {}

  register(service: PlatformService): void {
    if (this.entries.has(service.name)) throw new Error(`service ${service.name} is registered twice`);
    this.entries.set(service.name, { service, state: 'stopped', startedAt: undefined, errors: new Map() });
    this.order = undefined;
  }

  names(): string[] {
    return this.startOrder();
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  get(name: string): PlatformService {
    return this.entry(name).service;
  }

  state(name: string): ServiceState {
    return this.entry(name).state;
  }

  uptimeSeconds(name: string): number {
    const e = this.entry(name);
    return e.startedAt === undefined || e.state !== 'running'
      ? 0
      : Math.floor((Date.now() - e.startedAt) / 1000);
  }

  dependents(name: string): string[] {
    return this.startOrder().filter((n) => this.entry(n).service.dependencies.includes(name));
  }

  recordError(name: string, error: unknown): void {
    const e = this.entries.get(name);
    if (!e) return;
    const message = error instanceof Error ? error.message : String(error);
    const existing = e.errors.get(message);
    if (existing) {
      existing.count += 1;
      existing.timestamp = new Date().toISOString();
    } else {
      e.errors.set(message, { timestamp: new Date().toISOString(), error: message, count: 1 });
      if (e.errors.size > 20) e.errors.delete(e.errors.keys().next().value as string);
    }
  }

  recentErrors(name: string): { timestamp: string; error: string; count: number }[] {
    return [...this.entry(name).errors.values()].reverse();
  }

  /** Dependencies before dependents; ties by registration order. Unknown or cyclic dependencies throw. */
  startOrder(): string[] {
    this.order ??= this.computeOrder();
    return [...this.order];
  }

  private computeOrder(): string[] {
    const order: string[] = [];
    const visiting = new Set<string>();
    const visit = (name: string, from?: string) => {
      if (order.includes(name)) return;
      const e = this.entries.get(name);
      if (!e) throw new Error(`service ${from} depends on unknown service ${name}`);
      if (visiting.has(name)) throw new Error(`service dependency cycle at ${name}`);
      visiting.add(name);
      for (const dep of e.service.dependencies) visit(dep, name);
      visiting.delete(name);
      order.push(name);
    };
    for (const name of this.entries.keys()) visit(name);
    return order;
  }

  async startAll(): Promise<void> {
    for (const name of this.startOrder()) await this.startOne(name);
  }

  async stopAll(): Promise<void> {
    for (const name of this.startOrder().reverse()) await this.stopOne(name);
  }

  /** Stops the service's dependents (last first), restarts it, then starts them again. */
  async restart(name: string): Promise<{ durationMs: number; restarted: string[] }> {
    this.entry(name);
    const start = performance.now();
    const dependents = this.transitiveDependents(name);
    for (const d of [...dependents].reverse()) await this.stopOne(d);
    await this.stopOne(name);
    await this.startOne(name);
    for (const d of dependents) await this.startOne(d);
    return { durationMs: performance.now() - start, restarted: [name, ...dependents] };
  }

  /**
   * Moves on whenever a service starts, stops or fails, or a health result is forgotten: what was assembled
   * from earlier health results (the `/status` snapshot) is stale once it differs.
   */
  get healthGeneration(): number {
    return this.changes;
  }

  /**
   * The service's health check. Callers that ask while a check of the same service is running share its
   * result instead of starting another, and a finished check answers for `healthMaxAgeMs` (a start, stop or
   * restart of the service forgets it at once). `fresh` (diagnostics) waits for a check begun now.
   */
  health(name: string, options: { fresh?: boolean } = {}): Promise<ServiceHealth> {
    const e = this.entry(name);
    if (e.state !== 'running') {
      return Promise.resolve({
        status: 'unhealthy',
        checks: [{ name: 'running', status: 'fail', state: e.state }],
      });
    }
    const recent = this.recent.get(name);
    if (!options.fresh && recent !== undefined && performance.now() - recent.at < this.healthMaxAgeMs)
      return Promise.resolve(recent.health);
    const running = this.checking.get(name);
    if (running !== undefined) return running;
    const check = this.check(name, e)
      .then((health) => {
        if (this.checking.get(name) === check) this.recent.set(name, { at: performance.now(), health });
        return health;
      })
      .finally(() => {
        if (this.checking.get(name) === check) this.checking.delete(name);
      });
    this.checking.set(name, check);
    return check;
  }

  private async check(name: string, e: Entry): Promise<ServiceHealth> {
    const started = performance.now();
    try {
      return extend(await e.service.health(), { durationMs: performance.now() - started });
    } catch (err) {
      this.recordError(name, err);
      return {
        status: 'unhealthy',
        checks: [{ name: 'health', status: 'fail', error: (err as Error).message }],
        durationMs: performance.now() - started,
      };
    }
  }

  private transitiveDependents(name: string): string[] {
    const found = new Set<string>();
    const walk = (n: string) => {
      for (const d of this.dependents(n)) {
        if (!found.has(d)) {
          found.add(d);
          walk(d);
        }
      }
    };
    walk(name);
    return this.startOrder().filter((n) => found.has(n));
  }

  private async startOne(name: string): Promise<void> {
    const e = this.entry(name);
    this.forgetHealth(name);
    if (e.state === 'running') return;
    e.state = 'starting';
    this.changes += 1;
    try {
      await e.service.start();
      e.state = 'running';
      this.changes += 1;
      e.startedAt = Date.now();
    } catch (err) {
      e.state = 'failed';
      this.changes += 1;
      this.recordError(name, err);
      throw err;
    }
  }

  private forgetHealth(name: string): void {
    this.changes += 1;
    this.recent.delete(name);
    this.checking.delete(name);
  }

  private async stopOne(name: string): Promise<void> {
    const e = this.entry(name);
    this.forgetHealth(name);
    if (e.state !== 'running' && e.state !== 'failed') return;
    e.state = 'stopping';
    this.changes += 1;
    try {
      await e.service.stop();
    } catch (err) {
      this.recordError(name, err);
    } finally {
      e.state = 'stopped';
      this.changes += 1;
      e.startedAt = undefined;
    }
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e)
      throw new AppError('RESOURCE_NOT_FOUND', `service '${name}' does not exist`, {
        details: { service: name },
      });
    return e;
  }
}
