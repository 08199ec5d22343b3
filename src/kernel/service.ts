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
  /** The service's effective settings, secrets already masked. */
  settings?(): Record<string, unknown>;
  /**
   * The service's own diagnostics for `POST /api/v1/components/diagnostics`: really exercise the component,
   * bounded in time and load, leaving no data behind; stop early when `signal` aborts. Without it, the
   * platform times the service's `health()` instead.
   */
  diagnose?(test: DiagnosticTest, signal: AbortSignal): Promise<DiagnosticOutcome>;
}
