import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import stringify from 'safe-stable-stringify';

const require = createRequire(import.meta.url);

/**
 * Where the build writes the route schemas' functions (scripts/precompile-schemas.ts): beside the bundle's
 * chunks, `dist/platform/precompiled-schemas/`. Run from the sources there is no such folder and every schema
 * is compiled on its first use, as before.
 */
export const PRECOMPILED_SCHEMAS_DIR = fileURLToPath(new URL('./precompiled-schemas/', import.meta.url));

type AjvOptions = { customOptions?: Record<string, unknown>; mode?: string; plugins?: unknown[] };
type RouteSchema = { schema?: unknown; httpPart?: string };

/**
 * The name of a route validator's file: a hash of everything its code depends on — the schema, the HTTP part,
 * the Ajv options (`coerceTypes` among them: a body's validator does not coerce, the others do) and the
 * server's shared schemas (`addSchema`). A schema that changed, or one the build never saw (a plugin's), has a
 * name no file has.
 */
export function validatorKey(
  routeSchema: RouteSchema,
  externalSchemas: unknown,
  options: AjvOptions,
): string {
  return hash({
    compiler: 'ajv',
    httpPart: routeSchema.httpPart,
    options: {
      customOptions: options.customOptions,
      mode: options.mode,
      plugins: options.plugins?.length ?? 0,
    },
    externalSchemas,
    schema: routeSchema.schema,
  });
}

/** The name of a response serializer's file: the schema, fast-json-stringify's options and the shared schemas. */
export function serializerKey(routeSchema: RouteSchema, externalSchemas: unknown, options: unknown): string {
  return hash({ compiler: 'fast-json-stringify', options, externalSchemas, schema: routeSchema.schema });
}

function hash(what: unknown): string {
  return createHash('sha256')
    .update(stringify(what) ?? '')
    .digest('hex')
    .slice(0, 40);
}

/**
 * The function the build wrote under `key`, or undefined when there is none or it cannot be loaded (then the
 * caller compiles the schema, which is always correct, only slower).
 */
export function loadPrecompiled<T>(dir: string, key: string): T | undefined {
  const file = join(dir, `${key}.cjs`);
  if (!existsSync(file)) return undefined;
  try {
    const loaded = require(file) as T;
    return typeof loaded === 'function' ? loaded : undefined;
  } catch {
    return undefined;
  }
}
