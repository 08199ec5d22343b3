import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const brotli = promisify(brotliCompress);
const gz = promisify(gzip);

/**
 * Writes `.br` and `.gz` beside every built script and stylesheet, so the platform's static file server
 * sends them compressed without compressing on each request.
 */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'platform-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    async closeBundle() {
      const assets = join(outDir, 'assets');
      for (const name of await readdir(assets)) {
        if (!/\.(js|css|svg|json)$/.test(name)) continue;
        const body = await readFile(join(assets, name));
        await writeFile(join(assets, `${name}.gz`), await gz(body, { level: 9 }));
        await writeFile(
          join(assets, `${name}.br`),
          await brotli(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
        );
      }
    },
  };
}

/** The admin console: a Preact single-page app served by the platform at /console. */
export default defineConfig({
  base: '/console/',
  // Preact through esbuild's automatic JSX runtime; no framework plugin needed.
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 400,
  },
  plugins: [precompress()],
  // `npx vite console` serves the console with hot reload at :5173/console/ against a platform on :8080.
  server: {
    proxy: {
      '/api': { target: process.env['PLATFORM_URL'] ?? 'http://127.0.0.1:8080', ws: true },
      '/openapi.json': process.env['PLATFORM_URL'] ?? 'http://127.0.0.1:8080',
    },
  },
});
