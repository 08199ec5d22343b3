import type { ApiError } from '../api/api-error.ts';

/** An API error as the operator needs it: what failed, the code to look up, and the request id for the logs. */
export function ErrorNotice({ error, title }: { error: ApiError | undefined; title?: string }) {
  if (!error) return null;
  return (
    <div class="notice notice-error" role="alert">
      {title ? <strong>{title}: </strong> : null}
      {error.message}
      <span class="muted">
        {' '}
        ({error.code}
        {error.requestId ? `, request ${error.requestId}` : ''})
      </span>
    </div>
  );
}
