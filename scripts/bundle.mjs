#!/usr/bin/env node
/**
 * Bundles the platform's command (`src/main.ts`) and the entries of its workers (the plugin worker, the
 * backup's table dump) into `dist/platform/` with esbuild, after `tsc` has written `dist/src/` (which the
 * package's `./sdk` and `./client` exports and their types still use). Loading one bundle instead of some
 * three hundred of our modules and a few thousand of the dependencies' is most of the start-up time
 * (docs/performance.md). Dependencies that need their own files at
 * run time stay external: native addons, packages that start worker threads from their own folder (pino),
 * packages that serve files from theirs (swagger-ui), and the drivers loaded only in cluster mode.
 */
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'dist/platform');

rmSync(OUT, { recursive: true, force: true });
await build({
  absWorkingDir: ROOT,
  entryPoints: {
    main: 'src/main.ts',
    'plugin-worker': 'src/plugins/plugin-worker.ts',
    'table-dump-worker': 'src/backups/table-dump-worker.ts',
  },
  outdir: OUT,
  // Beside the entries: bundled code that finds files next to itself (the plugin worker) runs from any chunk.
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // Less for V8 to parse at start; names stay, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  external: [
    'better-sqlite3',
    'better-sqlite3-napi',
    '@node-rs/argon2',
    'pino',
    'thread-stream',
    'pino-pretty',
    '@fastify/swagger-ui',
    'pg',
    'pg-native',
    'ioredis',
    'nodemailer',
    'tsx',
  ],
  // Bundled CommonJS dependencies call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __platformRequire } from 'node:module';\nconst require = __platformRequire(import.meta.url);",
  },
});
