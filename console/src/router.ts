import { useEffect, useState } from 'preact/hooks';

/** Where the platform serves the console; client routes live below it. */
export const BASE = '/console';

export interface Route {
  /** The path below the base, always starting with `/` (`/users/usr_1`). */
  path: string;
  query: URLSearchParams;
}

const listeners = new Set<() => void>();

function current(): Route {
  const raw = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return {
    path: raw === '' ? '/' : raw.replace(/\/+$/, '') || '/',
    query: new URLSearchParams(location.search),
  };
}

export function href(path: string): string {
  return `${BASE}${path === '/' ? '/' : path}`;
}

/** Moves to a client route without reloading; `replace` keeps history clean for filter changes. */
export function navigate(path: string, replace = false): void {
  const target = href(path);
  if (target === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  for (const l of listeners) l();
}

addEventListener('popstate', () => {
  for (const l of listeners) l();
});

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    listeners.add(update);
    return () => listeners.delete(update);
  }, []);
  return route;
}

/**
 * Matches `/users/:id` against a path; returns the parameters, or null. Parameters are URI-decoded.
 */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const a = path.split('/');
  if (p.length !== a.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const seg = p[i]!;
    const val = a[i]!;
    if (seg.startsWith(':')) params[seg.slice(1)] = decodeURIComponent(val);
    else if (seg !== val) return null;
  }
  return params;
}
