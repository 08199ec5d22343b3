import { Field } from './field.tsx';
import { JsonArrayInput } from './json-input.tsx';
import { ListInput } from './list-input.tsx';

/** The part of JSON Schema a plugin's `config_schema` uses that the console can render as a form. */
export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  items?: JsonSchema;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  secret?: boolean;
  format?: string;
}

/** What the server puts in place of a secret's value; sending it back leaves the secret unchanged. */
export const SECRET_MASK = '********';

type Value = Record<string, unknown>;

function typeOf(schema: JsonSchema): string {
  const t = Array.isArray(schema.type) ? schema.type.find((x) => x !== 'null') : schema.type;
  if (t) return t;
  if (schema.properties) return 'object';
  return 'string';
}

const DECIMAL = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

/** The enum value whose text is `text` (an option's value is text; the enum may hold numbers or booleans). */
const enumValue = (options: unknown[], text: string) => options.find((o) => String(o) === text);

/**
 * How a line of a list is sent for the list's item schema: a number for a number item, true/false for a boolean
 * one, the enum value for an enum; a line that is none of these is sent as typed, for the platform to name it.
 */
function itemOf(items: JsonSchema | undefined): (line: string) => unknown {
  if (items?.enum) {
    const options = items.enum;
    return (line) => {
      const found = enumValue(options, line);
      return found === undefined ? line : found;
    };
  }
  const type = items ? typeOf(items) : 'string';
  if (type === 'integer' || type === 'number') {
    return (line) => (DECIMAL.test(line) && Number.isFinite(Number(line)) ? Number(line) : line);
  }
  if (type === 'boolean') return (line) => (line === 'true' ? true : line === 'false' ? false : line);
  return (line) => line;
}

/** Whether a list's items are edited one per line (text, numbers, booleans) rather than as JSON. */
const oneLinePerItem = (items: JsonSchema | undefined) =>
  !items || items.enum !== undefined || ['string', 'integer', 'number', 'boolean'].includes(typeOf(items));

/**
 * A form generated from a JSON Schema object: text, number, checkbox, select for enums, one line per item for
 * arrays of text, numbers or booleans, JSON for arrays of objects, nested fieldsets for objects, and password
 * inputs for properties marked `secret`. Values keep the schema's types: a number is sent as a number, an
 * enum's choice as the enum's own value. `errors` are keyed by dotted path (`smtp.port`).
 */
export function SchemaForm({
  schema,
  value,
  onChange,
  errors = {},
  path = '',
}: {
  schema: JsonSchema;
  value: Value;
  onChange: (next: Value) => void;
  errors?: Record<string, string>;
  path?: string;
}) {
  const props = schema.properties ?? {};
  return (
    <>
      {Object.entries(props).map(([key, sub]) => {
        const full = path ? `${path}.${key}` : key;
        const label = `${sub.title ?? key}${schema.required?.includes(key) ? ' *' : ''}`;
        const current = value[key];
        const set = (v: unknown) => onChange({ ...value, [key]: v });
        const type = typeOf(sub);
        if (type === 'object') {
          return (
            <fieldset key={key}>
              <legend>{label}</legend>
              <SchemaForm
                schema={sub}
                value={(current as Value) ?? {}}
                onChange={set}
                errors={errors}
                path={full}
              />
            </fieldset>
          );
        }
        const hint = sub.description;
        const error = errors[full];
        if (type === 'boolean') {
          return (
            <label key={key} class="check-label">
              <input
                type="checkbox"
                checked={current === true}
                onChange={(e) => set(e.currentTarget.checked)}
              />{' '}
              {label}
              {error ? <span class="field-error"> {error}</span> : null}
            </label>
          );
        }
        return (
          <Field key={key} label={label} error={error} {...(hint ? { hint } : {})}>
            {(p) => {
              if (sub.enum) {
                return (
                  <select
                    {...p}
                    value={String(current ?? '')}
                    onChange={(e) => {
                      const raw = e.currentTarget.value;
                      set(raw === '' ? undefined : enumValue(sub.enum ?? [], raw));
                    }}
                  >
                    <option value="">—</option>
                    {sub.enum.map((o) => (
                      <option key={String(o)} value={String(o)}>
                        {String(o)}
                      </option>
                    ))}
                  </select>
                );
              }
              if (type === 'integer' || type === 'number') {
                return (
                  <input
                    {...p}
                    type="number"
                    step={type === 'integer' ? 1 : 'any'}
                    {...(sub.minimum === undefined ? {} : { min: sub.minimum })}
                    {...(sub.maximum === undefined ? {} : { max: sub.maximum })}
                    value={current === undefined || current === null ? '' : String(current)}
                    onInput={(e) => {
                      const raw = e.currentTarget.value;
                      set(raw === '' ? undefined : Number(raw));
                    }}
                  />
                );
              }
              if (type === 'array') {
                const list = Array.isArray(current) ? current : [];
                if (!oneLinePerItem(sub.items)) return <JsonArrayInput {...p} value={list} onChange={set} />;
                return <ListInput {...p} rows={3} value={list} item={itemOf(sub.items)} onChange={set} />;
              }
              return (
                <input
                  {...p}
                  type={sub.secret ? 'password' : 'text'}
                  autoComplete={sub.secret ? 'new-password' : 'off'}
                  value={current === undefined || current === null ? '' : String(current)}
                  onInput={(e) => set(e.currentTarget.value)}
                />
              );
            }}
          </Field>
        );
      })}
    </>
  );
}
