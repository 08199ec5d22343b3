import type { DiagnosticOutcome, DiagnosticTest, ServiceHealth } from '../kernel/service.js';
import { burst, latencyFigures, round } from './diagnostics-measure.js';

/**
 * Diagnostics of a service that has none of its own: its health check, timed. connectivity: once.
 * performance: 20 in sequence. stress: 100, 10 at once. Status follows what the checks answered.
 */
export async function diagnoseByHealth(
  health: () => Promise<ServiceHealth>,
  test: DiagnosticTest,
  signal: AbortSignal,
): Promise<DiagnosticOutcome> {
  const statuses: string[] = [];
  const total = test === 'connectivity' ? 1 : test === 'performance' ? 20 : 100;
  const concurrency = test === 'stress' ? 10 : 1;
  const outcome = await burst(total, concurrency, signal, async () => {
    statuses.push((await health()).status);
  });
  const unhealthy = statuses.filter((s) => s === 'unhealthy').length;
  const warnings = statuses.filter((s) => s === 'warning').length;
  return {
    status: outcome.errors > 0 || unhealthy > 0 ? 'fail' : warnings > 0 ? 'warning' : 'pass',
    details: {
      method: 'health_check',
      checks_run: statuses.length,
      unhealthy,
      warnings,
      errors: outcome.errors,
      ...(outcome.messages.length > 0 ? { error_messages: outcome.messages } : {}),
      ...latencyFigures(outcome.durationsMs),
      duration_ms: round(outcome.wallMs),
    },
  };
}
