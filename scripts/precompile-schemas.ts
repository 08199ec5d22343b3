/**
 * The build's last server step (`npm run build`): assembles the platform the way `platform openapi` does — a
 * throw-away SQLite folder, in-memory shared state, nothing listening — with compilers in "write" mode, and
 * writes every route schema's validator (Ajv's standalone code) and response serializer (fast-json-stringify's
 * standalone mode) into `dist/platform/precompiled-schemas/<key>.cjs`. The server loads them on a route's first
 * request instead of compiling there (src/http/lazy-schema-compilers.ts); the key (src/http/precompiled-schemas.ts)
 * hashes the schema with what its code depends on, so a schema the build did not see is still compiled.
 *
 * The functions refer to the formats by `require("./formats.cjs")`, bundled beside them here from
 * src/http/precompiled-formats.ts: the same formats the run-time compilers install.
 * Usage: tsx scripts/precompile-schemas.ts [out-dir]
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { FastifyServerOptions } from 'fastify';
import { loadBootConfig } from '../src/config/load-config.js';
import { withoutCoercion } from '../src/http/lazy-schema-compilers.js';
import * as formats from '../src/http/precompiled-formats.js';
import { PRECOMPILED_SCHEMAS_DIR, serializerKey, validatorKey } from '../src/http/precompiled-schemas.js';
import { createPlatform } from '../src/server.js';

const require = createRequire(import.meta.url);
type RouteSchema = { schema?: unknown; httpPart?: string; method?: string; url?: string };
type AjvOptions = { customOptions?: Record<string, unknown> } & Record<string, unknown>;
type Compile = ((routeSchema: RouteSchema) => unknown) & Record<symbol, { ajv: unknown }>;

// The very modules Fastify's defaults use, and the Ajv each of them loads (its code builder `_` must be that
// Ajv's own: a Code from another copy would be quoted as a string).
const ajvCompilerPath = require.resolve('@fastify/ajv-compiler');
const AjvCompiler = require(ajvCompilerPath) as (() => (
  externals: unknown,
  options: AjvOptions,
) => Compile) & {
  AjvReference: symbol;
};
const ajvOfCompiler = createRequire(ajvCompilerPath);
const { _ } = ajvOfCompiler('ajv') as { _: (strings: TemplateStringsArray, ...values: unknown[]) => unknown };
const standaloneCode = (
  ajvOfCompiler('ajv/dist/standalone') as { default: (ajv: unknown, fn: unknown) => string }
).default;
const fjsCompilerPath = require.resolve('@fastify/fast-json-stringify-compiler');
const SerializerSelector = require(fjsCompilerPath) as () => (
  externals: unknown,
  options: unknown,
) => (routeSchema: RouteSchema) => string;
const fjsAjv = createRequire(createRequire(fjsCompilerPath).resolve('fast-json-stringify'))('ajv') as {
  _: typeof _;
};

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
// The folder the bundle's lazy-schema-compilers reads (PRECOMPILED_SCHEMAS_DIR, beside the bundle's chunks).
const out = process.argv[2] ?? join(ROOT, 'dist/platform', basename(PRECOMPILED_SCHEMAS_DIR));
const written = new Set<string>();
let routes = 0;

function write(key: string, code: string): void {
  if (written.has(key)) return;
  written.add(key);
  writeFileSync(join(out, `${key}.cjs`), `${code}\n`);
}

/**
 * The functions name their formats; the formats themselves come from formats.cjs at run time. The formats of the
 * Ajv the server's compilers set up (ajv-formats, then `ajv.onCreate`) must be those, or a format's meaning
 * would differ between a precompiled validator and one compiled at run time.
 */
function sameFormats(ajvFormats: Record<string, unknown>, ours: Record<string, unknown>): void {
  const text = (f: unknown) =>
    typeof f === 'object' && f !== null && !(f instanceof RegExp)
      ? Object.values(f).map(String).join('\n')
      : String(f);
  const names = new Set([...Object.keys(ajvFormats), ...Object.keys(ours)]);
  for (const name of names) {
    if (text(ajvFormats[name]) !== text(ours[name])) {
      throw new Error(`format "${name}" differs from src/http/precompiled-formats.ts: update that module`);
    }
  }
}

const writing: NonNullable<FastifyServerOptions['schemaController']> = {
  compilersFactory: {
    buildValidator: ((externalSchemas: unknown, ajvOptions: AjvOptions) => {
      const compilers = new Map<boolean, Compile>();
      return (routeSchema: RouteSchema) => {
        routes++;
        const body = routeSchema.httpPart === 'body';
        // Exactly the options the run-time compiler uses for this part (its key), plus the code options.
        const options = body ? withoutCoercion(ajvOptions) : ajvOptions;
        const key = validatorKey(routeSchema, externalSchemas, options);
        let compile = compilers.get(body);
        if (!compile) {
          compile = AjvCompiler()(externalSchemas, {
            ...options,
            customOptions: {
              ...options.customOptions,
              code: { source: true, formats: _`require("./formats.cjs").validators` },
            },
          });
          compilers.set(body, compile);
        }
        const validate = compile(routeSchema);
        const ajv = compile[AjvCompiler.AjvReference]?.ajv as { formats: Record<string, unknown> };
        sameFormats(ajv.formats, formats.validators);
        write(key, standaloneCode(ajv, validate));
        return validate;
      };
    }) as never,
    buildSerializer: ((externalSchemas: unknown, serializerOptions: unknown) => {
      const compile = SerializerSelector()(externalSchemas, {
        ...(serializerOptions as object),
        mode: 'standalone',
        // A response schema's anyOf/oneOf branches are told apart by Ajv: its code goes in the same file.
        inlineValidators: true,
        ajv: { code: { formats: fjsAjv._`require("./formats.cjs").serializers` } },
      });
      return (routeSchema: RouteSchema) => {
        routes++;
        write(serializerKey(routeSchema, externalSchemas, serializerOptions), compile(routeSchema));
        return () => '';
      };
    }) as never,
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const started = Date.now();
const dir = mkdtempSync(join(tmpdir(), 'platform-precompile-'));
try {
  const platform = await createPlatform({
    // Neither this shell's PLATFORM_* variables nor a config file here: the defaults, as a server has them.
    boot: loadBootConfig({
      env: {},
      cwd: dir,
      overrides: {
        storage: { data_dir: dir },
        database: { url: '' },
        redis: { url: '' },
        logging: { level: 'silent' },
        auth: { argon2_memory_kib: 1024, argon2_time_cost: 1 },
      },
    }),
    print: () => {},
    schemaController: writing,
  });
  await platform.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
// The formats the functions refer to, on their own (CommonJS, like the functions).
await build({
  absWorkingDir: ROOT,
  entryPoints: ['src/http/precompiled-formats.ts'],
  outfile: join(out, 'formats.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
});
// Every file must load where it lies (its requires resolve from there), and be a function.
for (const file of readdirSync(out)) {
  if (file !== 'formats.cjs' && typeof require(join(out, file)) !== 'function') {
    throw new Error(`${file} does not export a function`);
  }
}
process.stdout.write(
  `precompiled ${written.size} files from ${routes} compiler calls (identical schemas share one) in ${Date.now() - started} ms\n`,
);
