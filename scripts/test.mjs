#!/usr/bin/env node
/**
 * `npm test`: runs Vitest once per test project — `embedded` (SQLite), then `cluster` (PostgreSQL and Redis) —
 * passing any arguments through (`npm test -- test/events`). Workers run many files each (`isolate: false`
 * in vitest.config.ts); a worker must not move from one project to the other, whose backends differ, so the
 * projects run one after the other rather than in one pool. Both run even when the first fails; the exit
 * code is the first non-zero one. PLATFORM_TEST_BACKENDS=embedded (comma-separated names) picks projects.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const vitest = createRequire(import.meta.url).resolve('vitest/vitest.mjs');
const args = process.argv.slice(2);
const chosen = (process.env.PLATFORM_TEST_BACKENDS ?? 'embedded,cluster').split(',').filter(Boolean);
let status = 0;
for (const project of chosen) {
  process.stdout.write(`\n=== test project: ${project}\n`);
  // A file filter may match files of one project only (test/unit runs on `embedded` alone).
  const filtered = args.length > 0 ? ['--passWithNoTests'] : [];
  const run = spawnSync(process.execPath, [vitest, 'run', '--project', project, ...filtered, ...args], {
    stdio: 'inherit',
  });
  const code = run.status ?? 1;
  if (code !== 0 && status === 0) status = code;
}
process.exit(status);
