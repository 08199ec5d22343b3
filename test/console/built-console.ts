import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const CONSOLE_DIR = fileURLToPath(new URL('../../console', import.meta.url));
const ROOT = join(CONSOLE_DIR, '..');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** A hash of everything the build reads, so an unchanged console is built once and reused across runs. */
function sourceHash(): string {
  const hash = createHash('sha256');
  const inputs = [
    ...filesUnder(join(CONSOLE_DIR, 'src')),
    join(CONSOLE_DIR, 'index.html'),
    join(CONSOLE_DIR, 'vite.config.ts'),
    join(ROOT, 'package-lock.json'),
  ].sort();
  for (const file of inputs) hash.update(relative(ROOT, file)).update(readFileSync(file));
  return hash.digest('hex').slice(0, 16);
}

let building: Promise<string> | undefined;

/**
 * Builds the console with the project's own Vite config into a folder of its own (never into console/dist,
 * which `npm run build` owns) and returns that folder. The build runs as a child process, exactly as
 * `npm run build:console` would, outside the test runner's own Vite.
 */
export function builtConsole(): Promise<string> {
  building ??= (async () => {
    const dir = join(tmpdir(), `platform-console-${sourceHash()}`);
    const ready = () => existsSync(join(dir, 'index.html'));
    if (ready()) return dir;
    // Test files run in parallel processes: the first takes the lock and builds, the others wait for it.
    const lock = `${dir}.lock`;
    const deadline = Date.now() + 120_000;
    while (!tryLock(lock)) {
      if (ready()) return dir;
      if (Date.now() > deadline) throw new Error(`timed out waiting for the console build (${lock})`);
      await new Promise((r) => setTimeout(r, 200));
    }
    try {
      if (ready()) return dir;
      const staging = `${dir}.${process.pid}.tmp`;
      const env = { ...process.env };
      delete env['NODE_ENV'];
      await run(
        process.execPath,
        [
          join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'),
          'build',
          CONSOLE_DIR,
          '--outDir',
          staging,
          '--emptyOutDir',
          '--logLevel',
          'warn',
        ],
        { cwd: ROOT, env, timeout: 90_000 },
      );
      rmSync(dir, { recursive: true, force: true });
      renameSync(staging, dir);
      return dir;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  })();
  return building;
}

/** An atomic lock (mkdir); one left behind by a killed run is taken over after two minutes. */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
    } catch {
      // Released meanwhile.
    }
    return false;
  }
}
