import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { generateSync } from 'json-schema-faker';

type Schema = Record<string, unknown>;

export interface FuzzOperation {
  method: string;
  path: string;
  parameters: { name: string; in: string; schema?: Schema; required?: boolean }[];
  body?: Schema;
  /** The document marks the body not required (`requestBody.required: false`): leaving it out is valid. */
  bodyOptional?: boolean;
}

/** One request the fuzzer sends: what goes on the wire, and whether the request is invalid by construction. */
export interface FuzzRequest {
  url: string;
  body?: string;
  contentType?: string;
  label: string;
}

const HUGE = 'Ω'.repeat(20_000);
const NASTY_STRINGS = [
  '',
  ' ',
  HUGE,
  "' OR '1'='1",
  '"; drop table users; --',
  '../../../../etc/passwd',
  '\u0000',
  '%00',
  '\ud83d\ude00\u202e\u0301',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '*',
  '**',
  '__proto__',
  'constructor',
];
const NASTY_NUMBERS = [-1, 0, -(2 ** 63), 2 ** 63, 2 ** 53 + 1, 1e308, -1e308, 0.5, -0.000001];

/** Values of every kind, weighted toward the edges that break parsers and queries. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(...NASTY_STRINGS),
  fc.constantFrom<unknown>(...NASTY_NUMBERS),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
);

// The options of the platform's own validator (src/server.ts): a value it coerces (null to false, "1" to 1)
// counts as accepted, so only requests the platform must refuse are sent as invalid.
const ajv = new Ajv2020({
  strict: false,
  allErrors: false,
  validateFormats: false,
  logger: false,
  coerceTypes: 'array',
  useDefaults: true,
});
const validators = new WeakMap<Schema, ValidateFunction>();

/** Whether the request body schema accepts `value` (the fuzzer only sends what it must refuse). */
export function acceptsBody(schema: Schema, components: unknown, value: unknown): boolean {
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile({ ...schema, components });
    validators.set(schema, validate);
  }
  return validate(structuredClone(value)) === true;
}

function sampleOf(schema: Schema, seed: number): unknown {
  try {
    return generateSync(schema as never, { seed });
  } catch {
    return {};
  }
}

/** Breaks a schema-shaped object in one of the ways a careless or hostile client would. */
function mutate(base: unknown, kind: number, value: unknown, pick: number): string {
  const obj: Record<string, unknown> =
    typeof base === 'object' && base !== null && !Array.isArray(base) ? { ...(base as object) } : {};
  const keys = Object.keys(obj);
  const key = keys.length > 0 ? (keys[pick % keys.length] as string) : 'field';
  switch (kind) {
    case 0: // a field of the wrong type or with an edge value
      obj[key] = value;
      return JSON.stringify(obj);
    case 1: // a required field missing
      delete obj[key];
      return JSON.stringify(obj);
    case 2: // a field far past any length limit
      obj[key] = HUGE;
      return JSON.stringify(obj);
    case 3: // a field nobody declared
      obj['unexpected_field'] = value;
      return JSON.stringify(obj);
    case 4: // prototype pollution attempt, as raw JSON (a JS literal would set the prototype instead)
      {
        const rest = JSON.stringify(obj).slice(1);
        const hostile = '{"__proto__":{"role":"admin","polluted":true},"constructor":{"prototype":{"x":1}}';
        return rest === '}' ? `${hostile}}` : `${hostile},${rest}`;
      }
    case 5: // not an object at all
      return JSON.stringify(value);
    default: // the whole body replaced by nested junk
      return JSON.stringify({ [key]: { nested: [value, value] } });
  }
}

/** Requests with a broken or hostile body for an operation that takes one. */
export function bodyRequests(op: FuzzOperation, url: string, components: unknown): fc.Arbitrary<FuzzRequest> {
  const schema = op.body ?? { type: 'object' };
  const structured = fc
    .record({
      seed: fc.integer({ min: 1, max: 1_000_000 }),
      kind: fc.integer({ min: 0, max: 6 }),
      value: nastyValue,
      pick: fc.nat(),
    })
    .map(({ seed, kind, value, pick }) => {
      const body = mutate(sampleOf(schema, seed), kind, value, pick);
      // A mutation that happens to be valid (an optional field removed) is not sent: every request of this
      // batch must be one the platform refuses.
      const parsed = kind === 4 ? undefined : (JSON.parse(body) as unknown);
      const valid = kind !== 4 && acceptsBody(schema, components, parsed);
      return valid
        ? undefined
        : {
            url,
            body,
            contentType: 'application/json',
            label: `body mutation ${kind}: ${body.slice(0, 160)}`,
          };
    });
  // An empty body is no body: where the document says the body is optional (DELETE /api/v1/cache reads the
  // query without one; POST /api/v1/admin/system/clear-cache clears everything), an empty one is a valid
  // request, not one to refuse.
  const empty: FuzzRequest[] =
    op.bodyOptional === true
      ? []
      : [{ url, body: '', contentType: 'application/json', label: 'empty JSON body' }];
  const raw = fc.constantFrom<FuzzRequest>(
    { url, body: '{"broken": ', contentType: 'application/json', label: 'broken JSON' },
    ...empty,
    { url, body: 'username=admin&x=1', contentType: 'application/x-www-form-urlencoded', label: 'form body' },
    { url, body: '{"a":1}', contentType: 'text/plain', label: 'JSON as text/plain' },
    { url, body: '<a>1</a>', contentType: 'application/xml', label: 'XML body' },
    { url, body: '\u0000\u00ff\ud800', contentType: 'application/json', label: 'binary junk' },
    {
      url,
      body: JSON.stringify({ a: 'x'.repeat(2_000_000) }),
      contentType: 'application/json',
      label: 'over 1 MiB',
    },
  );
  return fc
    .oneof({ weight: 3, arbitrary: structured }, { weight: 1, arbitrary: raw })
    .filter((r): r is FuzzRequest => r !== undefined);
}

/** Requests with hostile query strings for any operation. */
export function queryRequests(op: FuzzOperation, path: string): fc.Arbitrary<FuzzRequest> {
  const names = op.parameters.filter((p) => p.in === 'query').map((p) => p.name);
  return fc
    .array(
      fc.record({
        name:
          names.length > 0
            ? fc.oneof(fc.constantFrom(...names), fc.constant('unexpected'))
            : fc.constant('x'),
        value: nastyValue,
      }),
      { minLength: 1, maxLength: 4 },
    )
    .map((pairs) => {
      const query = pairs
        .flatMap(({ name, value }) =>
          (Array.isArray(value) ? value : [value]).map(
            (v) =>
              `${encodeURIComponent(name)}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`,
          ),
        )
        .join('&');
      return { url: `${path}?${query}`, label: `query ${query.slice(0, 160)}` };
    });
}

/** Hostile path parameter values (URL-encoded), so routes with ids see them too. */
export const nastyPathValue = fc
  .constantFrom(...NASTY_STRINGS.filter((s) => s !== '' && s !== HUGE), 'x'.repeat(5000), '-1', '0', '1e999')
  .map((s) => encodeURIComponent(s));
