/**
 * Bounds every route's input schema (body, querystring, params, headers) is held to when it declares none
 * itself, so no unbounded string, array or integer reaches a handler (OWASP API4:2023, unrestricted resource
 * consumption). They are applied to the schema that validates the request, so the OpenAPI document states
 * exactly what the platform enforces.
 */
export const INPUT_BOUNDS = {
  maxLength: 4096,
  maxItems: 1000,
  minimum: Number.MIN_SAFE_INTEGER,
  maximum: Number.MAX_SAFE_INTEGER,
} as const;

type Schema = Record<string | symbol, unknown>;

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

const hasType = (s: Schema, type: string) =>
  s['type'] === type || (Array.isArray(s['type']) && (s['type'] as unknown[]).includes(type));

/** A copy of `schema` with the default bounds filled in where it has none; the original is left alone. */
export function boundInput(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(boundInput);
  if (!isSchema(schema)) return schema;
  const out: Schema = {};
  // Symbol keys too: TypeBox marks its schemas with them.
  for (const key of Reflect.ownKeys(schema)) {
    const value = schema[key];
    if (key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'definitions') {
      out[key] = isSchema(value)
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, boundInput(v)]))
        : value;
    } else if (key === 'content' && isSchema(value)) {
      // A body declared per media type (`content: {'application/json': {schema}}`).
      out[key] = Object.fromEntries(
        Object.entries(value).map(([media, m]) => [
          media,
          isSchema(m) && 'schema' in m ? { ...m, schema: boundInput(m['schema']) } : m,
        ]),
      );
    } else if (
      key === 'items' ||
      key === 'additionalProperties' ||
      key === 'anyOf' ||
      key === 'oneOf' ||
      key === 'allOf' ||
      key === 'not' ||
      key === 'prefixItems'
    ) {
      out[key] = boundInput(value);
    } else {
      out[key] = value;
    }
  }
  const fixed = 'enum' in out || 'const' in out;
  if (hasType(out, 'string') && !fixed && out['maxLength'] === undefined)
    out['maxLength'] = INPUT_BOUNDS.maxLength;
  if (hasType(out, 'array') && out['maxItems'] === undefined) out['maxItems'] = INPUT_BOUNDS.maxItems;
  if (hasType(out, 'integer') && !fixed) {
    out['format'] ??= 'int64';
    if (out['minimum'] === undefined && out['exclusiveMinimum'] === undefined)
      out['minimum'] = INPUT_BOUNDS.minimum;
    if (out['maximum'] === undefined && out['exclusiveMaximum'] === undefined)
      out['maximum'] = INPUT_BOUNDS.maximum;
  }
  return out;
}
