import { fileURLToPath, pathToFileURL } from 'node:url';

/** How to run a worker entry: a built file to start, or (from the sources) its bundled program as code. */
export type WorkerProgram = { file: string } | { code: string };

/**
 * The program of a worker entry module named `name` beside the caller (`base`, its `import.meta.url`). Built,
 * that is the `.js` file there: tsc writes it beside the caller in `dist/src/`, and `scripts/bundle.mjs` makes it
 * an entry beside the bundle's chunks in `dist/platform/`. From the sources (tests under Vitest, `npm run dev`
 * under tsx) it is the TypeScript file bundled by esbuild (a development dependency) into one program, once per
 * process, so the worker needs no TypeScript loader. The bundle for `new Worker(code, { eval: true })` is an
 * IIFE: that code runs as a script, whose top-level declarations would become globals (TypeBox's `Function`
 * replaced the global one, and better-sqlite3 13's row factory calls `Function(…)`). It has no
 * `import.meta.url`: that reads as the entry's own URL, so `createRequire(import.meta.url)` still finds the
 * packages left `external` (native addons) in the source tree's node_modules.
 */
export function workerEntry(
  name: string,
  base: string,
  options: { format: 'esm' | 'iife'; external?: string[] },
): () => Promise<WorkerProgram> {
  const url = new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
  let bundled: Promise<string> | undefined;
  return async () => {
    const entry = fileURLToPath(url);
    if (entry.endsWith('.js')) return { file: entry };
    bundled ??= import('esbuild').then(async ({ build }) => {
      const out = await build({
        entryPoints: [entry],
        bundle: true,
        format: options.format,
        platform: 'node',
        target: 'node20',
        write: false,
        logLevel: 'silent',
        external: options.external ?? [],
        ...(options.format === 'iife'
          ? { define: { 'import.meta.url': JSON.stringify(pathToFileURL(entry).href) } }
          : {}),
      });
      return out.outputFiles[0]?.text ?? '';
    });
    return { code: await bundled };
  };
}
