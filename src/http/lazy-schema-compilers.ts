import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';
import {
  loadPrecompiled,
  PRECOMPILED_SCHEMAS_DIR,
  serializerKey,
  validatorKey,
} from './precompiled-schemas.js';

const require = createRequire(import.meta.url);

type Compile = (routeSchema: unknown) => unknown;
type AjvOptions = { customOptions?: Record<string, unknown> } & Record<string, unknown>;
type BuildCompiler = (externalSchemas: unknown, serverOptions: unknown) => Compile;
type Validate = ((data: unknown, context?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };

// Fastify's own defaults, the very compilers it would use without this module, loaded (and their Ajv
// instance made) when the first schema is compiled.
const defaultValidatorBuilder = () => (require('@fastify/ajv-compiler') as () => BuildCompiler)();
const defaultSerializerBuilder = () =>
  (require('@fastify/fast-json-stringify-compiler') as () => BuildCompiler)();

/** Where the build's precompiled schema functions are, and who hears of a schema compiled at run time. */
export interface SchemaCompilerOptions {
  /** Default: beside the bundle (`dist/platform/precompiled-schemas/`). */
  precompiledDir?: string;
  /** Called each time a schema had no precompiled function and was compiled in this process. */
  onRuntimeCompile?: (what: { kind: 'validator' | 'serializer'; method?: string; url?: string }) => void;
}

type RouteSchema = { httpPart?: string; method?: string; url?: string; schema?: unknown };

/**
 * Fastify's default validator (Ajv) and serializer (fast-json-stringify) compilers, each compiling a route's
 * schema when the route first needs it rather than when it is registered.
 *
 * Compiling every schema of every route at start-up was half of the platform's start-up time and a good part
 * of its idle memory, for routes most instances never serve. The compiled functions and their behaviour are
 * the defaults' own; only the moment of compiling moves. Schemas are static and every route is exercised by
 * the contract tests, so a schema that fails to compile still fails a test rather than a user.
 *
 * On that first use, the function the build generated for the schema (with the same libraries' standalone
 * modes, scripts/precompile-schemas.ts) is loaded when there is one: a small module rather than an Ajv
 * instance and a compile, tens of ms on the server's thread. A schema without one (run from the sources, a
 * plugin's route, a schema changed since the build) is compiled as before.
 */
export function lazySchemaCompilers(
  options: SchemaCompilerOptions = {},
): NonNullable<FastifyServerOptions['schemaController']> {
  const dir = options.precompiledDir ?? PRECOMPILED_SCHEMAS_DIR;
  const ranCompile = (kind: 'validator' | 'serializer', routeSchema: RouteSchema) =>
    options.onRuntimeCompile?.({ kind, method: routeSchema.method, url: routeSchema.url });
  return {
    compilersFactory: {
      buildValidator: ((externalSchemas: unknown, ajvOptions: AjvOptions) => {
        let coercing: Compile | undefined;
        let strict: Compile | undefined;
        return (routeSchema: RouteSchema) =>
          lazyValidator(() => {
            // A JSON body says what types its values have: `"priority": "5"` or `"roles": "user"` is refused,
            // not read as 5 or ["user"]. The query string, path and headers are text, so those are converted.
            const body = routeSchema.httpPart === 'body';
            const partOptions = body ? withoutCoercion(ajvOptions) : ajvOptions;
            const precompiled = loadPrecompiled<Validate>(
              dir,
              validatorKey(routeSchema, externalSchemas, partOptions),
            );
            if (precompiled) return precompiled;
            ranCompile('validator', routeSchema);
            if (body) {
              strict ??= defaultValidatorBuilder()(externalSchemas, partOptions);
              return strict(routeSchema) as Validate;
            }
            coercing ??= defaultValidatorBuilder()(externalSchemas, partOptions);
            return coercing(routeSchema) as Validate;
          });
      }) as never,
      buildSerializer: ((externalSchemas: unknown, serializerOptions: unknown) => {
        let compile: Compile | undefined;
        return (routeSchema: RouteSchema) => {
          let serialize: ((data: unknown) => string) | undefined;
          const build = () => {
            const key = serializerKey(routeSchema, externalSchemas, serializerOptions);
            const precompiled = loadPrecompiled<(data: unknown) => string>(dir, key);
            if (precompiled) return precompiled;
            ranCompile('serializer', routeSchema);
            compile ??= defaultSerializerBuilder()(externalSchemas, serializerOptions);
            return compile(routeSchema) as (data: unknown) => string;
          };
          return (data: unknown) => {
            serialize ??= build();
            return serialize(data);
          };
        };
      }) as never,
    },
  };
}

export const withoutCoercion = (options: AjvOptions): AjvOptions => ({
  ...options,
  customOptions: { ...options.customOptions, coerceTypes: false },
});

function lazyValidator(build: () => Validate): Validate {
  let validate: Validate | undefined;
  const lazy: Validate = (data, context) => {
    validate ??= build();
    const result = validate(data, context);
    lazy.errors = validate.errors;
    if (result !== true) return result;
    // Ajv coerces the strings `Infinity` and `1e400` to numbers and then checks no limit on them (its
    // `minimum`/`maximum` are skipped for non-finite values), and JSON's `1e400` parses to Infinity, which
    // JSON.stringify would store as null. Neither is a number the platform can keep.
    const path = nonFinitePath(data);
    if (path === undefined) return result;
    lazy.errors = [{ instancePath: path, keyword: 'type', params: {}, message: 'must be a finite number' }];
    return false;
  };
  // Fastify passes the parent object (so Ajv may coerce a root value) only to functions carrying `schemaEnv`,
  // which every Ajv function does: the placeholder keeps that call shape before the real one exists.
  lazy.schemaEnv = true;
  return lazy;
}

/**
 * The JSON pointer of the first number in `value` that is not finite, or undefined. Iterative, so a body
 * nested thousands deep cannot exhaust the stack; typed arrays (raw bodies) are not looked into. The path is
 * only built for a value that has such a number.
 */
function nonFinitePath(value: unknown): string | undefined {
  if (!hasNonFinite(value)) return undefined;
  let path = '';
  let item = value;
  while (typeof item === 'object' && item !== null) {
    const entries: Iterable<[unknown, unknown]> = Array.isArray(item) ? item.entries() : Object.entries(item);
    let next: [unknown, unknown] | undefined;
    for (const entry of entries) if (!next && hasNonFinite(entry[1])) next = entry;
    if (!next) break;
    path += `/${String(next[0])}`;
    item = next[1];
  }
  return path;
}

function hasNonFinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) return true;
    } else if (typeof item === 'object' && item !== null && !ArrayBuffer.isView(item)) {
      if (Array.isArray(item)) for (const child of item) stack.push(child);
      else for (const key in item) stack.push((item as Record<string, unknown>)[key]);
    }
  }
  return false;
}
