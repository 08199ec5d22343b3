import { useState } from 'preact/hooks';
import { ApiError } from '../api/api-error.ts';

export interface Action<A extends unknown[]> {
  run: (...args: A) => Promise<void>;
  busy: boolean;
  error: ApiError | undefined;
  clear: () => void;
}

/**
 * Wraps a mutation (a button or form submit): tracks that it runs, and keeps its error for display instead
 * of throwing it into the void.
 */
export function useAction<A extends unknown[]>(fn: (...args: A) => Promise<unknown>): Action<A> {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const run = async (...args: A) => {
    setBusy(true);
    setError(undefined);
    try {
      await fn(...args);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'CLIENT_ERROR', String(err)));
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(undefined) };
}
