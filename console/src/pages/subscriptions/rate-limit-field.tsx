import { Field } from '../../components/field.tsx';

/**
 * `webhook_config.rate_limit` as a form field: deliveries per second at most (fractions allowed), empty for
 * no limit. The creation and the edit forms both use it.
 */
export function RateLimitField({
  value,
  onInput,
  error,
}: {
  value: string;
  onInput: (value: string) => void;
  error: string | undefined;
}) {
  return (
    <Field
      label="Rate limit (per second)"
      error={error}
      hint="Deliveries per second at most, across all instances; empty: no limit"
    >
      {(p) => (
        <input
          {...p}
          name="rate_limit"
          type="number"
          min={0.01}
          max={10000}
          step="any"
          value={value}
          onInput={(e) => onInput(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}
