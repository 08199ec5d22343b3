import { Field } from '../../components/field.tsx';
import { ListInput } from '../../components/list-input.tsx';
import { SECRET_MASK } from '../../components/schema-form.tsx';
import type { Tree } from './config-diff.ts';
import { type KeyInfo, keyHint } from './config-key-info.ts';

/**
 * The keys of one configuration section as form controls, the control chosen by the type of the stored value
 * (`shape`; the API sends values, not schemas), not of the edited one: a number field the operator empties
 * stays a number field. A number field is required and takes fractions (a few keys are not integers), so the
 * form never sends a number setting as text. A masked secret shows as a password field holding the mask; left
 * alone, the mask goes back and the platform keeps the secret.
 */
export function ConfigFields({
  value,
  shape = value,
  onChange,
  errors,
  path,
  info,
}: {
  value: Tree;
  /** The stored section, whose values' types choose the controls (default: `value`). */
  shape?: Tree | undefined;
  onChange: (next: Tree) => void;
  errors: Record<string, string>;
  path: string;
  /** Each key's meaning and when it applies (config-key-info.ts), shown under its control. */
  info: ReadonlyMap<string, KeyInfo>;
}) {
  return (
    <>
      {Object.entries(value).map(([key, current]) => {
        const full = `${path}.${key}`;
        const error = errors[full];
        const set = (v: unknown) => onChange({ ...value, [key]: v });
        const stored = shape && Object.hasOwn(shape, key) ? shape[key] : current;
        const hint = keyHint(info.get(full));
        if (current !== null && typeof current === 'object' && !Array.isArray(current)) {
          const inner = stored !== null && typeof stored === 'object' ? (stored as Tree) : undefined;
          return (
            <fieldset key={key}>
              <legend>{key}</legend>
              <ConfigFields
                value={current as Tree}
                shape={inner}
                onChange={set}
                errors={errors}
                path={full}
                info={info}
              />
            </fieldset>
          );
        }
        if (typeof current === 'boolean') {
          return (
            <div key={key} class={`field${error ? ' field-invalid' : ''}`}>
              <label class="check-label">
                <input
                  type="checkbox"
                  name={full}
                  checked={current}
                  aria-invalid={Boolean(error)}
                  aria-describedby={error ? `${full}-error` : hint ? `${full}-hint` : undefined}
                  onChange={(e) => set(e.currentTarget.checked)}
                />{' '}
                {key}
              </label>
              {error ? (
                <span class="field-error" id={`${full}-error`}>
                  {error}
                </span>
              ) : hint ? (
                <span class="field-hint" id={`${full}-hint`}>
                  {hint}
                </span>
              ) : null}
            </div>
          );
        }
        return (
          <Field key={key} label={key} error={error} {...(hint ? { hint } : {})}>
            {(p) => {
              if (typeof stored === 'number') {
                // Empty (or not a number) is kept as '' only to show the empty field; `required` stops the
                // form from sending it.
                return (
                  <input
                    {...p}
                    name={full}
                    type="number"
                    step="any"
                    required
                    value={typeof current === 'number' ? String(current) : ''}
                    onInput={(e) => {
                      const n = e.currentTarget.valueAsNumber;
                      set(Number.isNaN(n) ? '' : n);
                    }}
                  />
                );
              }
              if (Array.isArray(current)) {
                return <ListInput {...p} name={full} value={current as unknown[]} onChange={set} />;
              }
              const secret = current === SECRET_MASK;
              return (
                <input
                  {...p}
                  name={full}
                  type={secret ? 'password' : 'text'}
                  autoComplete={secret ? 'new-password' : 'off'}
                  value={String(current ?? '')}
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
