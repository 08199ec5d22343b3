import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/api-error.ts';
import { get, type Query } from '../api/client.ts';

export interface ApiState<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads `GET path` and keeps it current: again whenever `path` or `query` change, and every `refreshMs` while
 * the tab is visible (not while a rate limit's retry_after runs, nor for an endpoint that does not exist).
 * A null path loads nothing. `query` may be a function, read at each load (moving time windows).
 */
export function useApi<T>(
  path: string | null,
  options: { query?: Query | (() => Query); refreshMs?: number } = {},
): ApiState<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<ApiError>();
  const [loading, setLoading] = useState(path !== null);
  const [tick, setTick] = useState(0);
  const queryRef = useRef(options.query);
  queryRef.current = options.query;
  /** No automatic reload before this time (a 429 said when to come back). */
  const pausedUntil = useRef(0);
  const queryKey = typeof options.query === 'function' ? 'fn' : JSON.stringify(options.query ?? {});

  useEffect(() => {
    if (path === null) {
      setLoading(false);
      return;
    }
    const controller = new AbortController();
    setLoading(true);
    const q = queryRef.current;
    get<T>(path, typeof q === 'function' ? q() : q, controller.signal)
      .then((d) => {
        setData(d);
        setError(undefined);
      })
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        const e = err instanceof ApiError ? err : new ApiError(0, 'CLIENT_ERROR', String(err));
        if (e.status === 429) pausedUntil.current = Date.now() + (e.retryAfter ?? 60) * 1000;
        setError(e);
      })
      .finally(() => {
        if (!controller.signal.aborted) setLoading(false);
      });
    return () => controller.abort();
  }, [path, queryKey, tick]);

  // An endpoint the platform does not have will not appear without a restart: stop asking.
  const unavailable = error?.unavailable ?? false;
  useEffect(() => {
    if (!options.refreshMs || path === null || unavailable) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible' && Date.now() >= pausedUntil.current) setTick((t) => t + 1);
    }, options.refreshMs);
    return () => clearInterval(timer);
  }, [options.refreshMs, path, unavailable]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}
