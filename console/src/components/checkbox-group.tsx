/** A set of choices as ticked boxes under a legend; the value is the list of ticked options, in click order. */
export function CheckboxGroup({
  legend,
  options,
  value,
  onChange,
  error,
  class: cls,
}: {
  legend: string;
  options: readonly string[];
  value: readonly string[];
  onChange: (value: string[]) => void;
  error?: string | undefined;
  class?: string;
}) {
  return (
    <fieldset class={cls}>
      <legend>{legend}</legend>
      {options.map((o) => (
        <label key={o} class="check-label">
          <input
            type="checkbox"
            checked={value.includes(o)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...value, o] : value.filter((x) => x !== o))}
          />{' '}
          {o}
        </label>
      ))}
      {error ? <span class="field-error">{error}</span> : null}
    </fieldset>
  );
}
