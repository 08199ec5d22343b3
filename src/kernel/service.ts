import type { MetricFamily } from './metric-family.js';

export type HealthStatus = 'healthy' | 'warning' | 'unhealthy';

export interface HealthCheck {
  name: string;
  status: 'pass' | 'warning' | 'fail';
  [measure: string]: unknown;
}

export interface ServiceHealth {
  status: HealthStatus;
  checks: HealthCheck[];
  details?: Record<string, unknown>;
  /** How long the check took, set by the registry (a result it answers again from its cache keeps it). */
  durationMs?: number;
}

export type DiagnosticTest = 'connectivity' | 'performance' | 'stress';

export interface DiagnosticOutcome {
  status: 'pass' | 'warning' | 'fail' | 'skipped';
  details: Record<string, unknown>;
}

/**
 * A component of the platform. The kernel starts services in dependency order and stops them in reverse;
 * status, health, the services API and shutdown are all read off the registry of these.
 */
export interface PlatformService {
  readonly name: string;
  readonly type: string;
  readonly dependencies: readonly string[];
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): Promise<ServiceHealth>;
  /** Figures measured by the service itself (counts, sizes, rates). */
  metrics(): Record<string, number>;
  /**
   * Figures for `GET /metrics` that a flat record cannot hold (labelled series, histograms); the flat ones
   * are exported from `metrics()` by src/metrics/service-families.ts. A scrape waits for a promise: what must
   * be read from the store at scrape time (never from a cached health check) is read here.
   */
  prometheus?(): MetricFamily[] | Promise<MetricFamily[]>;
  /** The service's effective settings, secrets already masked. */
  settings?(): Record<string, unknown>;
  /**
   * The service's own diagnostics for `POST /api/v1/components/diagnostics`: really exercise the component,
   * bounded in time and load, leaving no data behind; stop early when `signal` aborts. Without it, the
   * platform times the service's `health()` instead.
   */
  diagnose?(test: DiagnosticTest, signal: AbortSignal): Promise<DiagnosticOutcome>;
}
