import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';

/**
 * A button that asks first, in a native modal dialog: focus moves into it, Escape cancels, and focus
 * returns to the button afterwards.
 */
export function ConfirmButton({
  label,
  title,
  children,
  confirmLabel = 'Confirm',
  danger = false,
  disabled = false,
  onConfirm,
}: {
  label: string;
  title: string;
  children?: ComponentChildren;
  confirmLabel?: string;
  danger?: boolean;
  disabled?: boolean;
  onConfirm: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button
        type="button"
        class={danger ? 'danger' : ''}
        disabled={disabled}
        onClick={() => dialog.current?.showModal()}
      >
        {label}
      </button>
      <dialog ref={dialog} aria-label={title}>
        <form
          method="dialog"
          onSubmit={(e) => {
            const submitter = (e as SubmitEvent).submitter as HTMLButtonElement | null;
            if (submitter?.value === 'confirm') onConfirm();
          }}
        >
          <h2 class="dialog-title">{title}</h2>
          {children}
          <div class="actions">
            <button type="submit" value="cancel" autofocus>
              Cancel
            </button>
            <button type="submit" value="confirm" class={danger ? 'danger' : 'primary'}>
              {confirmLabel}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}
