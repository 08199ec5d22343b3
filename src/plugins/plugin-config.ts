import { Ajv, type ValidateFunction } from 'ajv';
import { SECRET_MASK } from '../config/config-masking.js';
import { AppError } from '../http/app-error.js';
import { isJsonObject } from '../kernel/json-object.js';

// One compiler for every plugin's config_schema: defaults filled in, `secret` known as an annotation.
const ajv = new Ajv({ useDefaults: true, allErrors: true, strict: false });
ajv.addKeyword({ keyword: 'secret', schemaType: 'boolean' });

const compiled = new WeakMap<object, ValidateFunction>();

/** Compiles a plugin's config_schema; `error` says why it cannot be used. */
export function compileConfigSchema(schema: Record<string, unknown>): {
  validate?: ValidateFunction;
  error?: string;
} {
  const cached = compiled.get(schema);
  if (cached) return { validate: cached };
  if (schema['type'] !== undefined && schema['type'] !== 'object')
    return { error: 'must describe an object' };
  try {
    const validate = ajv.compile(schema);
    compiled.set(schema, validate);
    return { validate };
  } catch (err) {
    return { error: `is not a valid JSON Schema: ${(err as Error).message}` };
  }
}

/**
 * Validates a plugin's configuration against its config_schema and fills in the defaults. A secret written
 * back as the mask keeps its current value, so a configuration read from the API can be sent back as is.
 *
 * @throws AppError VALIDATION_ERROR (422) with `details.field` as `config.<path>`
 */
export function validateConfig(
  schema: Record<string, unknown>,
  input: Record<string, unknown>,
  current: Record<string, unknown> = {},
): Record<string, unknown> {
  const { validate, error } = compileConfigSchema(schema);
  if (!validate) {
    throw new AppError('VALIDATION_ERROR', `The plugin's config_schema ${error}`, {
      details: { field: 'manifest.config_schema', reason: error },
    });
  }
  const value = unmask(schema, structuredClone(input), current) as Record<string, unknown>;
  if (!validate(value)) {
    const errors = (validate.errors ?? []).map((e) => {
      const missing = (e.params as { missingProperty?: string }).missingProperty;
      const extra = (e.params as { additionalProperty?: string }).additionalProperty;
      const path = [e.instancePath.replace(/^\//, '').replaceAll('/', '.'), missing ?? extra ?? '']
        .filter(Boolean)
        .join('.');
      return {
        field: path ? `config.${path}` : 'config',
        reason:
          e.keyword === 'required' ? 'is required' : extra ? 'unknown field' : (e.message ?? 'is invalid'),
      };
    });
    const first = errors[0] ?? { field: 'config', reason: 'is invalid' };
    throw new AppError('VALIDATION_ERROR', `Invalid plugin configuration: ${first.field} ${first.reason}`, {
      details: { field: first.field, reason: first.reason, errors },
    });
  }
  return value;
}

/**
 * `patch` merged into `current` (a PATCH of the configuration): objects are merged key by key at every depth,
 * arrays and other values replace, and `null` removes a key so its default applies again. Keys not sent —
 * secrets among them — keep their stored value.
 */
export function mergeConfig(
  current: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
    if (value === null) delete out[key];
    else out[key] = isJsonObject(value) && isJsonObject(out[key]) ? mergeConfig(out[key], value) : value;
  }
  return out;
}

const propertiesOf = (schema: unknown): Record<string, Record<string, unknown>> => {
  const props = (schema as { properties?: unknown } | undefined)?.properties;
  return props && typeof props === 'object' ? (props as Record<string, Record<string, unknown>>) : {};
};

/** The schema of an array's items, when it is one schema (not a tuple). */
const itemsOf = (schema: unknown): Record<string, unknown> | undefined => {
  const items = (schema as { items?: unknown } | undefined)?.items;
  return items && typeof items === 'object' && !Array.isArray(items)
    ? (items as Record<string, unknown>)
    : undefined;
};

/**
 * A copy of `value` with `fn` applied to every value its schema marks `"secret": true`, found through
 * `properties` and array `items` (the places a configuration keeps nested settings).
 */
export function mapSecrets(schema: unknown, value: unknown, fn: (secret: unknown) => unknown): unknown {
  if (!isJsonObject(schema)) return value;
  if (schema['secret'] === true) return fn(value);
  if (Array.isArray(value)) {
    const items = itemsOf(schema);
    return items ? value.map((v) => mapSecrets(items, v, fn)) : value;
  }
  if (!isJsonObject(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const [key, sub] of Object.entries(propertiesOf(schema))) {
    if (key in out) out[key] = mapSecrets(sub, out[key], fn);
  }
  return out;
}

/** The configuration with every value whose schema says `"secret": true` replaced by the mask. */
export function maskConfig(schema: unknown, config: Record<string, unknown>): Record<string, unknown> {
  return mapSecrets(schema, config, (v) =>
    v === '' || v === undefined || v === null ? v : SECRET_MASK,
  ) as Record<string, unknown>;
}

/** `input` with each secret sent back as the mask replaced by the current value at the same place. */
function unmask(schema: unknown, input: unknown, current: unknown): unknown {
  if (!isJsonObject(schema)) return input;
  if (schema['secret'] === true) return input === SECRET_MASK && current !== undefined ? current : input;
  if (Array.isArray(input)) {
    const items = itemsOf(schema);
    return items && Array.isArray(current) ? input.map((v, i) => unmask(items, v, current[i])) : input;
  }
  if (!isJsonObject(input)) return input;
  const was = isJsonObject(current) ? current : {};
  for (const [key, sub] of Object.entries(propertiesOf(schema))) {
    if (key in input) input[key] = unmask(sub, input[key], was[key]);
  }
  return input;
}
