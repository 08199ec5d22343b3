import { ApiError } from './api-error.ts';
import { accessToken, refreshSession, sessionRejected } from './session.ts';

export type Query = Record<string, string | number | boolean | undefined | null | readonly string[]>;

export interface RequestOptions {
  query?: Query;
  /** JSON body, or FormData for a multipart upload. */
  body?: unknown;
  signal?: AbortSignal;
}

interface EnvelopeBody {
  success?: boolean;
  data?: unknown;
  message?: string;
  error?: { code: string; message: string; details?: Record<string, unknown>; retry_after?: number };
  request_id?: string;
}

/** `/users` + query → `/api/v1/users?…`; arrays repeat their key, empty values are left out. */
export function apiUrl(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value)) for (const v of value) params.append(key, v);
    else params.set(key, String(value));
  }
  const qs = params.toString();
  return `/api/v1${path}${qs ? `?${qs}` : ''}`;
}

async function send(method: string, path: string, options: RequestOptions): Promise<Response> {
  const token = await accessToken();
  const headers: Record<string, string> = {};
  if (token) headers['authorization'] = `Bearer ${token}`;
  let body: BodyInit | undefined;
  if (options.body instanceof FormData) body = options.body;
  else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  try {
    return await fetch(apiUrl(path, options.query), {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK_ERROR', 'The platform could not be reached');
  }
}

/**
 * Calls the platform's API with the session's access token and unwraps the envelope. An expired token is
 * refreshed once and the call repeated; a refused session logs the console out.
 */
export async function requestRaw(method: string, path: string, options: RequestOptions = {}) {
  let res = await send(method, path, options);
  if (res.status === 401) {
    const reason = await res
      .clone()
      .json()
      .then((j: EnvelopeBody) => j.error?.details?.['reason'])
      .catch(() => undefined);
    if (reason === 'invalid_token' && (await refreshSession())) res = await send(method, path, options);
  }
  const json = (await res.json().catch(() => null)) as EnvelopeBody | null;
  if (!res.ok || json?.success !== true) {
    const error = new ApiError(
      res.status,
      json?.error?.code ?? 'HTTP_ERROR',
      json?.error?.message ?? `The server answered HTTP ${res.status}`,
      json?.error?.details ?? {},
      json?.request_id,
      json?.error?.retry_after,
    );
    // A 401 about a field (a wrong current password) is a form error; any other 401 ends the session.
    if (res.status === 401 && error.details['field'] === undefined) {
      sessionRejected(`${error.message}. Please log in again.`);
    }
    throw error;
  }
  return { data: json.data, message: json.message, status: res.status };
}

export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  return (await requestRaw(method, path, options)).data as T;
}

export const get = <T>(path: string, query?: Query, signal?: AbortSignal) =>
  api<T>('GET', path, { ...(query ? { query } : {}), ...(signal ? { signal } : {}) });
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, { body });
export const put = <T>(path: string, body: unknown) => api<T>('PUT', path, { body });
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, { body });
export const del = <T>(path: string, query?: Query) => api<T>('DELETE', path, query ? { query } : {});

/** Fetches a file with the session's token and hands it to the browser as a download. */
export async function download(path: string, fallbackName: string): Promise<void> {
  const res = await send('GET', path, {});
  if (!res.ok) {
    const json = (await res.json().catch(() => null)) as EnvelopeBody | null;
    throw new ApiError(
      res.status,
      json?.error?.code ?? 'HTTP_ERROR',
      json?.error?.message ?? `The server answered HTTP ${res.status}`,
      json?.error?.details ?? {},
    );
  }
  const disposition = res.headers.get('content-disposition') ?? '';
  const name = /filename="?([^";]+)"?/.exec(disposition)?.[1] ?? fallbackName;
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
