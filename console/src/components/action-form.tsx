import type { ComponentChildren } from 'preact';
import type { Action } from '../hooks/use-action.ts';
import { ErrorNotice } from './error-notice.tsx';

/**
 * A form that runs one action: its fields, the action's error (code and request id) below them, and the
 * submit button, disabled while the action runs. Enter in a field submits, as in any form.
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
  return (
    <form
      class="form-grid"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        beforeRun?.();
        void action.run();
      }}
    >
      {children}
      <ErrorNotice error={action.error} title={errorTitle} />
      <div class="actions">
        <button type="submit" class={submitClass} disabled={action.busy || disabled}>
          {submit}
        </button>
      </div>
    </form>
  );
}
