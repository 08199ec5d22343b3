import { performance } from 'node:perf_hooks';
import type { PlatformConfig } from '../config/config-schema.js';
import type { HealthCheck, HealthStatus } from '../kernel/service.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import { timedHealth } from '../kernel/timed-health.js';
import { overallStatus } from './overall-status.js';
import { memoryHealth } from './system-health-memory.js';
import type { SystemHealthWindow } from './system-health-window.js';

export interface ComponentHealth {
  name: string;
  status: HealthStatus;
  /** How long the component took to answer its health check. */
  response_time_ms: number;
  checks: HealthCheck[];
  details: Record<string, unknown>;
}

const MIB = 1024 * 1024;
const round = (n: number) => Math.round(n * 100) / 100;

/** Health of every registered service plus the process's memory, each measured now. */
export class SystemHealth {
  constructor(
    private readonly deps: {
      registry: ServiceRegistry;
      cfg: () => PlatformConfig;
      window: SystemHealthWindow;
      startedAt: number;
    },
  ) {}

  /** Every component's health, checked in parallel. */
  async components(): Promise<ComponentHealth[]> {
    const { registry } = this.deps;
    const services = await Promise.all(registry.names().map((name) => this.check(name)));
    const started = performance.now();
    const memory = memoryHealth(this.deps.cfg().health);
    return [
      ...services,
      {
        name: 'memory',
        status: memory.status,
        response_time_ms: round(performance.now() - started),
        checks: memory.checks,
        details: memory.details ?? {},
      },
    ];
  }

  /** `GET /api/v1/admin/system/health`: components plus the last minute's request and resource figures. */
  async report() {
    const components = await this.components();
    const window = this.deps.window.figures();
    return {
      overall_status: overallStatus(components.map((c) => c.status)),
      timestamp: new Date().toISOString(),
      uptime_seconds: Math.floor((Date.now() - this.deps.startedAt) / 1000),
      components: components.map((c) => ({
        name: c.name,
        status: c.status,
        response_time_ms: c.response_time_ms,
        details: { ...c.details, checks: c.checks },
      })),
      metrics: {
        requests_per_minute: window.requests_per_minute,
        average_response_time: window.average_response_time,
        error_rate: window.error_rate,
        memory_usage_mb: round(process.memoryUsage.rss() / MIB),
        cpu_usage_percent: window.cpu_usage_percent,
        window_seconds: window.window_seconds,
      },
    };
  }

  private async check(name: string): Promise<ComponentHealth> {
    const started = performance.now();
    const health = await timedHealth(this.deps.registry, name);
    return {
      name,
      status: health.status,
      // The check's own time (also for a result the registry answers again from its one-second cache); the
      // wait when it did not answer in time.
      response_time_ms: round(health.durationMs ?? performance.now() - started),
      checks: health.checks,
      details: { state: this.deps.registry.state(name), ...(health.details ?? {}) },
    };
  }
}
