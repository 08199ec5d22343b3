/**
 * The configuration every benchmarked platform runs with: the defaults, except what would measure the
 * benchmark's own artefacts instead of the platform (see docs/performance.md, "Bench configuration").
 */

/** Limits high enough that no benchmark is ever refused, while the limiter still runs on every request. */
export const RAISED_RATE_LIMITS = {
  enabled: true,
  // The largest limit the configuration accepts, per second: far above what one process can serve.
  authenticated: { max: 1_000_000, window_seconds: 1 },
  anonymous: { max: 1_000_000, window_seconds: 1 },
  auth: { max: 1_000_000, window_seconds: 1 },
} as const;

/** The same settings as PLATFORM__… variables, for a `platform serve` child process. */
export function benchEnvironment(dataDir: string, adminPassword: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PLATFORM_ADMIN_PASSWORD: adminPassword,
    PLATFORM__SERVER__PORT: '0',
    PLATFORM__SERVER__ENVIRONMENT: 'bench',
    PLATFORM__STORAGE__DATA_DIR: dataDir,
    // Info logs one line per request; at warn the logger still runs, but what it writes is what an
    // operator tuned for throughput would keep.
    PLATFORM__LOGGING__LEVEL: 'warn',
    PLATFORM__RATE_LIMITS__ENABLED: 'true',
  };
  for (const bucket of ['authenticated', 'anonymous', 'auth'] as const) {
    const limit = RAISED_RATE_LIMITS[bucket];
    env[`PLATFORM__RATE_LIMITS__${bucket.toUpperCase()}__MAX`] = String(limit.max);
    env[`PLATFORM__RATE_LIMITS__${bucket.toUpperCase()}__WINDOW_SECONDS`] = String(limit.window_seconds);
  }
  return env;
}
