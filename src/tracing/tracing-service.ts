import type { FastifyBaseLogger } from 'fastify';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';

/** At most one warning about failed exports per this long (the failures in between are counted in it). */
const WARN_EVERY_MS = 60_000;

/** What the OTLP exporter reports of a batch: the SDK's ExportResult (code 0 is SUCCESS). */
export interface ExportReport {
  code: number;
  error?: Error | undefined;
}

/**
 * The `tracing` component, registered when `tracing.otlp_endpoint` is set: counts the OTLP exports and their
 * failures (`platform_tracing_export_failures_total`), logs a failure as a warning at most once a minute, and
 * reports `warning` health while the last export failed. It names the endpoint without credentials, query or
 * headers.
 */
export class TracingService implements PlatformService {
  readonly name = 'tracing';
  readonly type = 'tracing';
  readonly dependencies: readonly string[] = [];
  private readonly counts = { exported: 0, failed: 0 };
  private failing: { since: string; error: string; consecutive: number } | undefined;
  private lastWarning = 0;
  private unwarned = 0;
  private log: FastifyBaseLogger | undefined;
  readonly endpoint: string;

  constructor(endpoint: string) {
    const url = new URL(tracesUrl(endpoint));
    this.endpoint = `${url.protocol}//${url.host}${url.pathname}`;
  }

  /** The logger is made after tracing (server.ts): failures before it are counted and warned about later. */
  attach(log: FastifyBaseLogger): void {
    this.log = log.child({ component: 'tracing' });
  }

  /** Called with the result of each export. */
  exported(report: ExportReport): void {
    if (report.code === 0) {
      this.counts.exported += 1;
      this.failing = undefined;
      return;
    }
    this.counts.failed += 1;
    const error = (report.error?.message ?? 'export failed').slice(0, 300);
    this.failing = {
      since: this.failing?.since ?? new Date().toISOString(),
      error,
      consecutive: (this.failing?.consecutive ?? 0) + 1,
    };
    this.unwarned += 1;
    const now = Date.now();
    if (!this.log || now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.log.warn(
      { endpoint: this.endpoint, error, failures: this.unwarned },
      'could not export spans to the OTLP endpoint',
    );
    this.unwarned = 0;
  }

  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  async health(): Promise<ServiceHealth> {
    const details = { endpoint: this.endpoint, exports: this.counts.exported, failures: this.counts.failed };
    if (!this.failing) {
      return { status: 'healthy', checks: [{ name: 'otlp_export', status: 'pass' }], details };
    }
    // Spans are auxiliary: events flow on without them, so failed exports are a warning, not an outage.
    return {
      status: 'warning',
      checks: [
        {
          name: 'otlp_export',
          status: 'warning',
          error: this.failing.error,
          failing_since: this.failing.since,
          consecutive_failures: this.failing.consecutive,
        },
      ],
      details,
    };
  }

  metrics(): Record<string, number> {
    return { tracing_exports: this.counts.exported, tracing_export_failures: this.counts.failed };
  }

  settings(): Record<string, unknown> {
    return { otlp_endpoint: this.endpoint };
  }
}

/**
 * The OTLP/HTTP traces URL: `http://collector:4318` means its standard path `/v1/traces`; a URL with a path is
 * used as it is.
 */
export function tracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/v1/traces';
  return url.toString();
}
