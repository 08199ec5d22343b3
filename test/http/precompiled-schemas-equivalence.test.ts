import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateSync } from 'json-schema-faker';
import { describe, expect, it } from 'vitest';
import { withoutCoercion } from '../../src/http/lazy-schema-compilers.js';
import { loadPrecompiled, serializerKey, validatorKey } from '../../src/http/precompiled-schemas.js';
import { startPlatform } from '../helpers/test-platform.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const PRECOMPILED = join(ROOT, 'dist/platform/precompiled-schemas');
const require = createRequire(import.meta.url);
const BUILT =
  spawnSync(process.execPath, [join(ROOT, 'scripts/start.mjs'), '--dry-run'], { cwd: ROOT }).status === 0;

type RouteSchema = { schema?: unknown; httpPart?: string; method?: string; url?: string };
type AjvOptions = { customOptions?: Record<string, unknown> } & Record<string, unknown>;
type Validate = ((data: unknown, context?: unknown) => unknown) & { errors?: unknown };
type Seen = {
  kind: 'validator' | 'serializer';
  routeSchema: RouteSchema;
  externals: unknown;
  options: unknown;
};

/** Values a client might send in a field, right or wrong. */
const ODD = [
  '5',
  5,
  5.5,
  -1,
  0,
  true,
  'true',
  null,
  '',
  'x'.repeat(300),
  [],
  ['a'],
  {},
  '2016-12-31T23:59:60Z',
];

function samples(schema: unknown): unknown[] {
  const out: unknown[] = [undefined, null, {}, '', 0];
  for (let seed = 1; seed <= 6; seed++) {
    try {
      out.push(generateSync(schema as never, { seed }));
    } catch {
      // a schema the faker cannot fill (a $ref to a shared schema): the odd values still run
    }
  }
  const base = out.find(
    (s) => typeof s === 'object' && s !== null && !Array.isArray(s) && Object.keys(s).length,
  );
  const properties = Object.keys((schema as { properties?: object }).properties ?? {});
  for (const key of properties) for (const odd of ODD) out.push({ ...(base as object), [key]: odd });
  return out;
}

describe('precompiled route schemas', () => {
  it('validate and serialize exactly as the schemas compiled at run time do, for every route of the platform', async () => {
    expect(
      BUILT && existsSync(PRECOMPILED),
      'dist/ is missing or older than the sources: run `npm run build`',
    ).toBe(true);
    const seen: Seen[] = [];
    const t = await startPlatform(
      {},
      {
        // Notes what every route gives its compilers, and compiles nothing.
        schemaController: {
          compilersFactory: {
            buildValidator: ((externals: unknown, options: AjvOptions) => (routeSchema: RouteSchema) => {
              seen.push({ kind: 'validator', routeSchema, externals, options });
              return () => true;
            }) as never,
            buildSerializer: ((externals: unknown, options: unknown) => (routeSchema: RouteSchema) => {
              seen.push({ kind: 'serializer', routeSchema, externals, options });
              return JSON.stringify;
            }) as never,
          },
        },
      },
    );
    await t.close();
    const AjvCompiler = require('@fastify/ajv-compiler') as () => (
      externals: unknown,
      options: AjvOptions,
    ) => (routeSchema: RouteSchema) => Validate;
    const SerializerSelector = require('@fastify/fast-json-stringify-compiler') as () => (
      externals: unknown,
      options: unknown,
    ) => (routeSchema: RouteSchema) => (data: unknown) => string;
    const validators = AjvCompiler();
    const serializers = SerializerSelector();
    let compared = 0;
    const missing: string[] = [];
    for (const { kind, routeSchema, externals, options } of seen) {
      const where = `${kind} ${routeSchema.method} ${routeSchema.url} ${routeSchema.httpPart ?? ''}`;
      if (kind === 'validator') {
        const partOptions =
          routeSchema.httpPart === 'body' ? withoutCoercion(options as AjvOptions) : (options as AjvOptions);
        const precompiled = loadPrecompiled<Validate>(
          PRECOMPILED,
          validatorKey(routeSchema, externals, partOptions),
        );
        if (!precompiled) {
          missing.push(where);
          continue;
        }
        const compiled = validators(externals, partOptions)(routeSchema);
        for (const sample of samples(routeSchema.schema)) {
          // Both may change what they validate (defaults, coercion): each gets its own copy.
          const [a, b] = [structuredClone({ v: sample }), structuredClone({ v: sample })];
          const ra = precompiled(a.v, { parentData: a, parentDataProperty: 'v' });
          const rb = compiled(b.v, { parentData: b, parentDataProperty: 'v' });
          expect({ result: ra, errors: precompiled.errors, data: a }, where).toEqual({
            result: rb,
            errors: compiled.errors,
            data: b,
          });
          compared++;
        }
      } else {
        const precompiled = loadPrecompiled<(data: unknown) => string>(
          PRECOMPILED,
          serializerKey(routeSchema, externals, options),
        );
        if (!precompiled) {
          missing.push(where);
          continue;
        }
        const compiled = serializers(externals, options)(routeSchema);
        for (const sample of samples(routeSchema.schema)) {
          const run = (f: (data: unknown) => string) => {
            try {
              return f(sample);
            } catch (err) {
              return `throws ${(err as Error).message}`;
            }
          };
          expect(run(precompiled), where).toBe(run(compiled));
          compared++;
        }
      }
    }
    expect(missing).toEqual([]);
    expect(seen.length).toBeGreaterThan(400);
    expect(compared).toBeGreaterThan(5000);
  }, 120_000);
});
