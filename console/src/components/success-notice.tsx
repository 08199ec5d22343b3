import type { ComponentChildren } from 'preact';

/** What an action achieved, announced politely; nothing when there is nothing to say. */
export function SuccessNotice({ children }: { children: ComponentChildren }) {
  if (children === null || children === undefined || children === false || children === '') return null;
  return (
    <p class="notice notice-good" role="status">
      {children}
    </p>
  );
}
