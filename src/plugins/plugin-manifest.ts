import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import semver from 'semver';
import { isValidPattern } from '../events/pattern-matcher.js';
import { AppError } from '../http/app-error.js';
import { declaredTypeProblems } from './declared-type-problems.js';
import { compileConfigSchema } from './plugin-config.js';

/** Capabilities a plugin may ask for; `area:*` grants every one of the area. */
export const PLUGIN_PERMISSIONS = [
  'events:emit',
  'events:subscribe',
  'http:routes',
  'http:fetch',
  'cache:use',
  'storage:use',
  'tasks:register',
] as const;
export type PluginPermission = (typeof PLUGIN_PERMISSIONS)[number];

const AREAS = [...new Set(PLUGIN_PERMISSIONS.map((p) => p.split(':')[0]))];
const KNOWN = [...PLUGIN_PERMISSIONS, ...AREAS.map((a) => `${a}:*`)];

export const PLUGIN_ID = '^[a-z0-9][a-z0-9-]{0,63}$';
const Slug = Type.String({ pattern: PLUGIN_ID, description: 'lower-case letters, digits and hyphens' });

/** A type the plugin emits, registered in the event catalogue with its schema while the plugin is installed. */
const DeclaredEventType = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    schema: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema (draft-07) of the data' }),
    examples: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Unknown()), { maxItems: 10 })),
  },
  { additionalProperties: false },
);

/** `plugin.json` (decisions §5). Unknown top-level fields are refused so a typo does not pass silently. */
export const ManifestSchema = Type.Object(
  {
    name: Slug,
    version: Type.String({ minLength: 1, maxLength: 64, description: 'semver, e.g. 1.2.0' }),
    description: Type.String({ maxLength: 1000, default: '' }),
    author: Type.String({ maxLength: 200, default: '' }),
    license: Type.String({ maxLength: 100, default: '' }),
    platform_version: Type.String({ minLength: 1, maxLength: 200, description: 'semver range, e.g. ^0.1.0' }),
    main: Type.String({ minLength: 1, maxLength: 255, default: 'index.js' }),
    dependencies: Type.Record(
      Type.String({ pattern: PLUGIN_ID }),
      Type.String({ minLength: 1, maxLength: 200 }),
      {
        default: {},
      },
    ),
    permissions: Type.Array(Type.String(), { maxItems: 32, default: [] }),
    events: Type.Object(
      {
        emits: Type.Array(Type.String(), { maxItems: 100, default: [] }),
        subscribes: Type.Array(Type.String(), { maxItems: 100, default: [] }),
        types: Type.Record(Type.String(), DeclaredEventType, { default: {} }),
      },
      { additionalProperties: false, default: {} },
    ),
    config_schema: Type.Record(Type.String(), Type.Unknown(), {
      default: { type: 'object', properties: {} },
    }),
    isolation: Type.Union([Type.Literal('inline'), Type.Literal('worker')], { default: 'inline' }),
  },
  { additionalProperties: false },
);
export type Manifest = Static<typeof ManifestSchema>;

interface Problem {
  field: string;
  reason: string;
}

const invalid = (problems: Problem[]) => {
  const first = problems[0] ?? { field: 'manifest', reason: 'is invalid' };
  return new AppError('VALIDATION_ERROR', `Invalid plugin manifest: ${first.field} ${first.reason}`, {
    details: { field: first.field, reason: first.reason, errors: problems },
  });
};

/**
 * Parses and validates `plugin.json`: the schema, then what a schema cannot say (semver version and ranges,
 * a `main` inside the package, known permissions, valid event patterns, a compilable config_schema).
 * Defaults are filled in.
 *
 * @throws AppError VALIDATION_ERROR (422) with `details.field` as `manifest.<path>`
 */
export function parseManifest(text: Buffer | string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text.toString());
  } catch {
    throw invalid([{ field: 'manifest', reason: 'is not valid JSON' }]);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw invalid([{ field: 'manifest', reason: 'must be a JSON object' }]);
  }
  const value = Value.Default(ManifestSchema, structuredClone(raw));
  const problems: Problem[] = [...Value.Errors(ManifestSchema, value)].map((e) => ({
    field: `manifest${e.path.replaceAll('/', '.')}`,
    reason: e.message,
  }));
  // What a schema cannot say is checked too, on every field the schema found in order, so one answer lists
  // every problem.
  const sound = (field: string) =>
    !problems.some((p) => p.field === field || p.field.startsWith(`${field}.`));
  const m = value as Manifest;
  if (sound('manifest.version') && !semver.valid(m.version))
    problems.push({ field: 'manifest.version', reason: 'is not a semver version' });
  if (sound('manifest.platform_version') && !semver.validRange(m.platform_version)) {
    problems.push({ field: 'manifest.platform_version', reason: 'is not a semver range' });
  }
  for (const [dep, range] of sound('manifest.dependencies') ? Object.entries(m.dependencies) : []) {
    if (!semver.validRange(range)) {
      problems.push({ field: `manifest.dependencies.${dep}`, reason: 'is not a semver range' });
    }
    if (dep === m.name)
      problems.push({ field: `manifest.dependencies.${dep}`, reason: 'a plugin cannot depend on itself' });
  }
  const main = sound('manifest.main') ? m.main.replace(/^\.\//, '') : '';
  if (
    sound('manifest.main') &&
    (main.startsWith('/') || main.split('/').some((s) => s === '..' || s === '') || main.includes('\\'))
  ) {
    problems.push({ field: 'manifest.main', reason: 'must be a path inside the package' });
  }
  if (sound('manifest.permissions'))
    m.permissions.forEach((p, i) => {
      if (!KNOWN.includes(p)) {
        problems.push({
          field: `manifest.permissions.${i}`,
          reason: `unknown permission '${p}' (known: ${KNOWN.join(', ')})`,
        });
      }
    });
  for (const key of ['emits', 'subscribes'] as const) {
    if (!sound(`manifest.events.${key}`) || !sound('manifest.events')) continue;
    m.events[key].forEach((p, i) => {
      if (!isValidPattern(p))
        problems.push({
          field: `manifest.events.${key}.${i}`,
          reason: `'${p}' is not a valid event type or pattern`,
        });
    });
  }
  if (sound('manifest.events.types') && sound('manifest.events')) problems.push(...declaredTypeProblems(m));
  const schemaProblem = sound('manifest.config_schema')
    ? compileConfigSchema(m.config_schema).error
    : undefined;
  if (schemaProblem) problems.push({ field: 'manifest.config_schema', reason: schemaProblem });
  if (problems.length > 0) throw invalid(problems);
  return { ...m, main };
}

/** Whether the manifest grants a permission (directly or through `area:*`). */
export function grants(manifest: Pick<Manifest, 'permissions'>, permission: PluginPermission): boolean {
  const area = permission.split(':')[0];
  return manifest.permissions.includes(permission) || manifest.permissions.includes(`${area}:*`);
}
