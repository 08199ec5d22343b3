/**
 * How to run the platform's CLI from this checkout: the built bundle `dist/platform/main.js` when it (and
 * `dist/src/`) is at least as new as every source file (as right after `npm run build`, which CI does before the tests), else the TypeScript
 * sources through tsx. Starting from `dist` skips compiling some three hundred files on every start, which
 * made each spawned instance of the tests and benchmarks take seconds.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = resolve(import.meta.dirname, '..');
const BUNDLE = join(ROOT, 'dist/platform/main.js');
const require = createRequire(import.meta.url);

export interface PlatformCommand {
  /** `dist` or `tsx`, with the reason when the sources had to be used. */
  label: string;
  /** Arguments for `node` before the CLI's own (`serve`, `backup list`, …). */
  args: string[];
}

export function platformCommand(options: { justBuilt?: boolean } = {}): PlatformCommand {
  const dist = BUNDLE;
  if (options.justBuilt && existsSync(dist))
    return { label: 'dist (built at the start of this run)', args: [dist] };
  const stale = staleDistFile();
  if (stale === undefined) return { label: 'dist', args: [dist] };
  return {
    label: `tsx (dist is older than ${stale}; run \`npm run build\` to use the build)`,
    // Resolved here: a child's working folder may be one where `tsx` would not resolve.
    args: ['--import', pathToFileURL(require.resolve('tsx')).href, join(ROOT, 'src/main.ts')],
  };
}

/** The first source file whose built twin is missing or older, or undefined when `dist` is current. */
function staleDistFile(): string | undefined {
  if (!existsSync(join(ROOT, 'dist/src/main.js')) || !existsSync(BUNDLE)) return 'src/main.ts';
  const bundled = statSync(BUNDLE).mtimeMs;
  const walk = (dir: string): string | undefined => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        const found = walk(path);
        if (found) return found;
      } else if (/\.(ts|json)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        const built = join(ROOT, 'dist', relative(ROOT, path)).replace(/\.ts$/, '.js');
        const changed = statSync(path).mtimeMs;
        if (!existsSync(built) || statSync(built).mtimeMs < changed || bundled < changed)
          return relative(ROOT, path);
      }
    }
    return undefined;
  };
  return walk(join(ROOT, 'src'));
}
