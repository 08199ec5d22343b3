import type { HealthStatus } from '../kernel/service.js';

/** The worst of the parts: any unhealthy → unhealthy, any warning → warning, else healthy. */
export function overallStatus(statuses: readonly HealthStatus[]): HealthStatus {
  if (statuses.includes('unhealthy')) return 'unhealthy';
  if (statuses.includes('warning')) return 'warning';
  return 'healthy';
}
