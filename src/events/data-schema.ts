import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';

// ajv-formats is CommonJS: under ESM its function may sit on the default export's `default`.
type AddFormats = (ajv: Ajv) => unknown;
const addFormats = ((addFormatsImport as unknown as { default?: AddFormats }).default ??
  addFormatsImport) as unknown as AddFormats;

/**
 * One compiler for every event type's schema (JSON Schema draft-07, the formats of ajv-formats). Strict about the
 * schema, so a misspelt keyword (`"requird"`) or an unknown format is refused when the type is registered instead
 * of silently validating nothing. `addUsedSchema: false`: two types' schemas may carry the same `$id`.
 */
const ajv = new Ajv({
  allErrors: true,
  strict: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allowUnionTypes: true,
  addUsedSchema: false,
  logger: false,
});
addFormats(ajv);

/** What is wrong with a payload: the field as `data.<path>` and why. */
export interface DataProblem {
  field: string;
  reason: string;
}

/** Compiles the JSON Schema of a type's `data`; `error` says why it cannot be used. */
export function compileDataSchema(schema: Record<string, unknown>): {
  validate?: ValidateFunction;
  error?: string;
} {
  try {
    const validate = ajv.compile(schema);
    // The compiled function keeps what it needs; the instance's cache would otherwise keep every version.
    ajv.removeSchema(schema);
    return { validate };
  } catch (err) {
    ajv.removeSchema(schema);
    return { error: `is not a valid JSON Schema: ${(err as Error).message}` };
  }
}

/** The problems `validate` found in the last payload, each naming its field from `data`. */
export function dataProblems(validate: ValidateFunction): DataProblem[] {
  return (validate.errors ?? []).map(problemOf);
}

function problemOf(e: ErrorObject): DataProblem {
  const params = e.params as { missingProperty?: string; additionalProperty?: string };
  const extra = params.additionalProperty;
  const path = ['data', ...e.instancePath.split('/').slice(1).map(unescapePointer)];
  if (params.missingProperty !== undefined) path.push(params.missingProperty);
  if (extra !== undefined) path.push(extra);
  const reason =
    e.keyword === 'required'
      ? 'is required'
      : extra !== undefined
        ? 'unknown field'
        : (e.message ?? 'is invalid');
  return { field: path.join('.'), reason };
}

const unescapePointer = (segment: string) => segment.replaceAll('~1', '/').replaceAll('~0', '~');
