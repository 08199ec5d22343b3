#!/usr/bin/env node
/**
 * `npm test`: runs Vitest once per test project — `embedded` (SQLite), then `cluster` (PostgreSQL and Redis) —
 * passing any arguments through (`npm test -- test/events`). Workers run many files each (`isolate: false`
 * in vitest.config.ts); a worker must not move from one project to the other, whose backends differ, so the
 * projects run one after the other rather than in one pool. Both run even when the first fails; the exit
 * code is the first non-zero one. PLATFORM_TEST_BACKENDS=embedded (comma-separated names) picks projects.
 *
 * The last lines printed name every failed test of every project with the first lines of its error: a log
 * read from its end (a CI run's tail) shows what failed even when the failure came in the first project.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const vitest = createRequire(import.meta.url).resolve('vitest/vitest.mjs');
const args = process.argv.slice(2);
const chosen = (process.env.PLATFORM_TEST_BACKENDS ?? 'embedded,cluster').split(',').filter(Boolean);
// test/cli/npm-start.test.ts runs `npm start` on the build, test/http/precompiled-schemas*.test.ts the bundle and
// its precompiled schemas: a checkout whose build is missing or older than its sources (a fresh clone:
// `npm install && npm test`) is built first, as `npm start` would, before any test runs (building during the
// tests would rewrite dist/ under the other CLI tests). Only for runs that include one of them.
const startScript = join(import.meta.dirname, 'start.mjs');
const onTheBuild = [
  'test/cli/npm-start.test.ts',
  'test/http/precompiled-schemas.test.ts',
  'test/http/precompiled-schemas-equivalence.test.ts',
];
const runsNpmStart =
  args.length === 0 || args.some((a) => onTheBuild.some((file) => file.includes(a.replace(/^\.\//, ''))));
if (runsNpmStart && spawnSync(process.execPath, [startScript, '--dry-run']).status !== 0) {
  process.stdout.write('\n=== building first: test/cli/npm-start.test.ts runs `npm start` on the build\n');
  const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
const reports = mkdtempSync(join(tmpdir(), 'platform-test-'));
const failures = [];
let status = 0;
for (const project of chosen) {
  process.stdout.write(`\n=== test project: ${project}\n`);
  // A file filter may match files of one project only (test/unit runs on `embedded` alone).
  const filtered = args.length > 0 ? ['--passWithNoTests'] : [];
  const report = join(reports, `${project}.json`);
  const reporters = ['--reporter=default', '--reporter=json', `--outputFile.json=${report}`];
  const run = spawnSync(
    process.execPath,
    [vitest, 'run', '--project', project, ...reporters, ...filtered, ...args],
    {
      stdio: 'inherit',
    },
  );
  const code = run.status ?? 1;
  if (code !== 0 && status === 0) status = code;
  if (code !== 0) failures.push(...failedIn(project, report, code));
}
rmSync(reports, { recursive: true, force: true });
if (failures.length > 0) {
  process.stdout.write(`\n=== failed (${failures.length})\n${failures.join('\n')}\n`);
}
process.exit(status);

/** The failed tests of one project's JSON report, each with its error's first lines. */
function failedIn(project, report, code) {
  let results;
  try {
    results = JSON.parse(readFileSync(report, 'utf8')).testResults ?? [];
  } catch {
    return [`[${project}] exited with ${code} and left no report`];
  }
  const lines = [];
  for (const file of results) {
    const name = file.name.replace(`${process.cwd()}/`, '');
    const failed = (file.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failed) {
      const why = (a.failureMessages ?? []).join('\n').split('\n').slice(0, 6).join('\n      ');
      lines.push(`[${project}] ${name} > ${a.fullName}\n      ${why}`);
    }
    if (failed.length === 0 && file.status === 'failed') {
      lines.push(
        `[${project}] ${name}\n      ${String(file.message ?? '')
          .split('\n')
          .slice(0, 6)
          .join('\n      ')}`,
      );
    }
  }
  return lines.length > 0 ? lines : [`[${project}] exited with ${code}; no failed test in its report`];
}
