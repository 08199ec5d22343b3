import { defineConfig } from 'vitest/config';

/**
 * Two projects over one suite: `embedded` runs every test on SQLite with in-memory shared state;
 * `cluster` runs the storage-facing tests again on PostgreSQL and Redis (both must be reachable:
 * a skipped backend is a failed run; the restart tests of test/cluster/service-restarts.test.ts stop and
 * start private servers of their own, never the shared ones). PLATFORM_TEST_BACKENDS=embedded runs the first
 * alone (names are comma-separated).
 */
const only = process.env.PLATFORM_TEST_BACKENDS;
const WORKERS = Number(process.env.PLATFORM_TEST_WORKERS ?? 3);
const projects = [
  {
    extends: true as const,
    test: {
      name: 'embedded',
      include: ['test/**/*.test.ts'],
      // test/cluster/ starts several processes on PostgreSQL and Redis; it has no embedded form.
      // The two-instance 5xx alert counts through Redis: it has no embedded form either.
      exclude: ['test/cluster/**', 'test/security/server-errors-cluster.test.ts'],
      env: { PLATFORM_TEST_BACKEND: 'sqlite' },
      // The console tests' Chromium, chosen (and unpacked when it is the bundled one) once per run.
      globalSetup: ['test/console/chromium-setup.ts'],
    },
  },
  {
    extends: true as const,
    test: {
      name: 'cluster',
      include: ['test/**/*.test.ts'],
      // Run once, on the embedded project, what does not depend on the backend: the browser tests of
      // test/console/ (they use only the HTTP API), the OpenAPI document and the client generated from it,
      // the route list, and the CLI's argument handling and output (cli-commands, serve, backup-cli) — the
      // storage behind those commands is proven on both backends by the API tests, and test/cluster/ serves
      // real instances on PostgreSQL and Redis.
      exclude: [
        'test/unit/**',
        'test/console/**',
        'test/openapi/**',
        'test/cli/cli-commands.test.ts',
        'test/cli/serve.test.ts',
        'test/cli/npm-start.test.ts',
        'test/backups/backup-cli.test.ts',
        'test/contract/typed-client.test.ts',
        'test/contract/interface-routes.test.ts',
        // The build's precompiled route schemas against the same schemas compiled at run time: no storage in it.
        'test/http/precompiled-schemas-equivalence.test.ts',
        // SQLite's own behaviour (its temporary files; a full database through its max_page_count): the
        // platform on SQLite, whichever project runs it, so once is enough.
        'test/storage/sqlite-temp-files.test.ts',
        'test/storage/storage-full.test.ts',
        'test/storage/sqlite-synchronous.test.ts',
        'test/backups/backup-import-full-database.test.ts',
        // An Idempotency-Key's unsynced commits: SQLite's kind of commit, which PostgreSQL does not have.
        'test/http/idempotency-unsynced.test.ts',
        // Which thread writes an emit's batch: SQLite's writer thread; PostgreSQL's writes are the server's.
        'test/storage/event-writes-thread.test.ts',
        // SQLite's query plans (PostgreSQL takes the primary key for an id list).
        'test/webhooks/delivery-status-plan.test.ts',
      ],
      env: { PLATFORM_TEST_BACKEND: 'cluster' },
      globalSetup: ['test/helpers/require-backends.ts'],
    },
  },
].filter((p) => !only || only.split(',').includes(p.test.name));

export default defineConfig({
  test: {
    pool: 'forks',
    // Vitest's default on a 2-core machine is one worker; the suite mostly waits (sockets, timers, other
    // processes), so four files at a time finish in a fraction of the time without starving each other.
    maxWorkers: WORKERS,
    // A worker runs many files: the platform's ~300 modules load once per worker, not once per file (that
    // load was most of the suite's time). Every file starts and closes platforms of its own, so files share
    // no state but the module cache.
    isolate: false,
    // As many as at most: the pool closes a worker that has nothing to do at once, and a closed worker's
    // files would load the platform again in the next one.
    minWorkers: WORKERS,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
    projects,
  },
});
