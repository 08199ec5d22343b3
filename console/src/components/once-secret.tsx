import { useLayoutEffect, useRef, useState } from 'preact/hooks';

/**
 * A secret the server shows exactly once (a new API key, a webhook secret, a temporary password): displayed
 * selectable with a copy button, and gone when dismissed. Focus moves to the secret's box as it appears (its
 * text selected, ready to copy), so a keyboard or screen-reader user lands on it.
 */
export function OnceSecret({
  label,
  value,
  onDismiss,
}: {
  label: string;
  value: string;
  onDismiss: () => void;
}) {
  const [copied, setCopied] = useState(false);
  const box = useRef<HTMLInputElement>(null);
  // A layout effect: before the focus keeper looks for a lost focus.
  useLayoutEffect(() => {
    box.current?.focus();
  }, [value]);
  return (
    <div class="notice notice-secret" role="status" data-testid="once-secret">
      <p>
        <strong>{label}</strong> — copy it now: it is shown only this once.
      </p>
      <div class="secret-row">
        <input
          ref={box}
          type="text"
          readOnly
          value={value}
          aria-label={label}
          onFocus={(e) => e.currentTarget.select()}
        />
        <button
          type="button"
          onClick={() => {
            void navigator.clipboard?.writeText(value).then(
              () => setCopied(true),
              () => setCopied(false),
            );
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={onDismiss}>
          Done
        </button>
      </div>
    </div>
  );
}
