import type { ServiceHealth } from './service.js';
import type { ServiceRegistry } from './service-registry.js';

/** A component that does not answer its health check within this time is reported unhealthy. */
export const HEALTH_TIMEOUT_MS = 5_000;

/** Settles as `promise` does, or with `fallback()` once `ms` have passed first (the promise itself goes on). */
export async function within<T>(promise: Promise<T>, ms: number, fallback: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback()), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The service's health check (the registry's, with its one-second reuse), or `unhealthy` once it has not
 * answered within HEALTH_TIMEOUT_MS: one component that stops answering (a PostgreSQL, Redis or SMTP server
 * that accepts and then says nothing) must not hold whatever reports the others.
 */
export function timedHealth(registry: ServiceRegistry, name: string): Promise<ServiceHealth> {
  return within(registry.health(name), HEALTH_TIMEOUT_MS, () => ({
    status: 'unhealthy',
    checks: [{ name: 'health', status: 'fail', error: `no answer within ${HEALTH_TIMEOUT_MS} ms` }],
  }));
}
