import { Field } from './field.tsx';
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

/**
 * A form generated from a JSON Schema object: text, number, checkbox, select for enums, one line per item for
 * string arrays, nested fieldsets for objects, and password inputs for properties marked `secret`.
 * `errors` are keyed by dotted path (`smtp.port`).
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
                  <select {...p} value={String(current ?? '')} onChange={(e) => set(e.currentTarget.value)}>
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
                return (
                  <ListInput {...p} rows={3} value={Array.isArray(current) ? current : []} onChange={set} />
                );
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
