#!/usr/bin/env node
/**
 * `npm start`: builds first (`npm run build`) only when something the build reads is newer than the last build,
 * then runs `platform serve` in this same process — one Node start, so an installed checkout listens about as
 * fast as `node dist/platform/main.js serve` does. `npm run build` ends with `--stamp`, which leaves
 * `dist/.build-stamp`; a missing stamp means no finished build. `--dry-run` only answers, by the exit code
 * (1), whether a build is due.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(ROOT, 'dist/.build-stamp');
/** What `npm run build` reads: the sources, the console's, and the files that say how to build them. */
const INPUTS = [
  'src',
  'console/src',
  'console/index.html',
  'console/vite.config.ts',
  'scripts/bundle.mjs',
  'scripts/precompile-schemas.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
];

/** The newest modification time under a path, in ms (0 when it does not exist). */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

const args = process.argv.slice(2);
if (args[0] === '--stamp') {
  // The last step of `npm run build`: the build finished.
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  process.exit(0);
}

const built = newest(STAMP);
const changed = INPUTS.map((p) => newest(join(ROOT, p))).reduce((a, b) => Math.max(a, b), 0);
const due = built === 0 || changed > built;
if (args[0] === '--dry-run') process.exit(due ? 1 : 0);
if (due) {
  process.stdout.write(
    built === 0 ? 'building (first start)\n' : 'building (sources changed since the last build)\n',
  );
  const run = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
// The command reads its arguments after the script's path: `start.mjs serve` is `platform serve`.
await import(pathToFileURL(join(ROOT, 'dist/platform/main.js')).href);
