/** A labelled text box in a list's filter bar. */
export function TextFilter({
  label,
  value,
  onChange,
  placeholder,
  type = 'text',
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  placeholder?: string;
  type?: 'text' | 'search';
}) {
  return (
    <label>
      {label}{' '}
      <input
        type={type}
        value={value}
        placeholder={placeholder}
        onInput={(e) => onChange(e.currentTarget.value)}
      />
    </label>
  );
}

/**
 * A labelled choice in a list's filter bar. Options are values shown as they are, or [value, text] pairs;
 * `any` (default "Any") is the first option, meaning no filter, unless null.
 */
export function SelectFilter({
  label,
  value,
  onChange,
  options,
  any = 'Any',
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  options: readonly (string | readonly [string, string])[];
  any?: string | null;
}) {
  return (
    <label>
      {label}{' '}
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {any === null ? null : <option value="">{any}</option>}
        {options.map((o) => {
          const [v, text] = typeof o === 'string' ? [o, o] : o;
          return (
            <option key={v} value={v}>
              {text}
            </option>
          );
        })}
      </select>
    </label>
  );
}
