import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';
import type { Action } from '../hooks/use-action.ts';
import { useFocusInvalid } from '../hooks/use-focus-invalid.ts';
import { ErrorNotice } from './error-notice.tsx';

/**
 * A form that runs one action: its fields, the action's error (code and request id) below them, and the
 * submit button, marked busy while the action runs (aria-disabled, not disabled: a disabled button loses
 * focus to the page body). Enter in a field submits, as in any form. A refusal with field errors moves focus
 * to the first invalid field; what happens to focus after a success is the focus keeper's (../focus.ts).
 */
export function ActionForm({
  label,
  action,
  submit,
  submitClass,
  disabled = false,
  errorTitle,
  beforeRun,
  children,
}: {
  /** The form's accessible name. */
  label: string;
  action: Action<[]>;
  submit: ComponentChildren;
  submitClass?: 'primary' | 'danger';
  disabled?: boolean;
  errorTitle?: string;
  /** Runs on submit before the action (clears a previous success message). */
  beforeRun?: () => void;
  children: ComponentChildren;
}) {
  const form = useRef<HTMLFormElement>(null);
  useFocusInvalid(form, action.error);
  return (
    <form
      ref={form}
      class="form-grid"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        if (action.busy || disabled) return;
        beforeRun?.();
        void action.run();
      }}
    >
      {children}
      <ErrorNotice error={action.error} title={errorTitle} />
      <div class="actions">
        <button
          type="submit"
          class={submitClass}
          disabled={disabled}
          aria-disabled={action.busy ? 'true' : undefined}
        >
          {submit}
        </button>
      </div>
    </form>
  );
}
