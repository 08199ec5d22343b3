import type { ComponentChildren } from 'preact';
import type { ApiState } from '../hooks/use-api.ts';
import { ErrorNotice } from './error-notice.tsx';
import { NotAvailable } from './not-available.tsx';

/**
 * The four states of loaded data in one place: loading, endpoint not available, error, and the data itself
 * (kept on screen while a refresh runs, so live pages do not flicker).
 */
export function ApiView<T>({
  state,
  what,
  endpoint,
  children,
}: {
  state: ApiState<T>;
  what: string;
  endpoint?: string;
  children: (data: T) => ComponentChildren;
}) {
  if (state.error?.unavailable) return <NotAvailable what={what} endpoint={endpoint} />;
  if (state.data === undefined) {
    if (state.error)
      return <ErrorNotice error={state.error} title={`Could not load ${what.toLowerCase()}`} />;
    return (
      <p class="muted" aria-busy="true">
        Loading {what.toLowerCase()}…
      </p>
    );
  }
  return (
    <>
      {state.error ? <ErrorNotice error={state.error} title="Refresh failed" /> : null}
      {children(state.data)}
    </>
  );
}
