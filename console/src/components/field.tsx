import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

/**
 * A labelled form control with room for its error. The label wraps the control, so clicking it focuses the
 * control and screen readers announce both; the error is tied to it with aria-describedby.
 */
export function Field({
  label,
  error,
  hint,
  children,
  inline = false,
}: {
  label: string;
  error?: string | undefined;
  hint?: string;
  children: (props: {
    id: string;
    'aria-invalid': boolean;
    'aria-describedby'?: string;
  }) => ComponentChildren;
  inline?: boolean;
}) {
  const id = useId();
  const describedBy = error ? `${id}-error` : hint ? `${id}-hint` : undefined;
  return (
    <div class={`field${inline ? ' field-inline' : ''}${error ? ' field-invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children({
        id,
        'aria-invalid': Boolean(error),
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
      })}
      {error ? (
        <span class="field-error" id={`${id}-error`}>
          {error}
        </span>
      ) : hint ? (
        <span class="field-hint" id={`${id}-hint`}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}
