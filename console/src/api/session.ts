import { ApiError } from './api-error.ts';

/** Who is logged in, as the login answer describes them. */
export interface SessionUser {
  id: string;
  username: string;
  roles: string[];
  permissions: string[];
}

export interface SessionState {
  user: SessionUser | null;
  passwordChangeRequired: boolean;
  /** Why the last session ended without a logout (shown on the login form). */
  endedBecause: string | null;
}

interface TokenPair {
  access_token: string;
  expires_in: number;
  refresh_token: string;
  user: SessionUser;
  password_change_required: boolean;
}

/**
 * The refresh token lives in sessionStorage so a reload of this tab stays logged in; the access token lives
 * only in this module's memory. See docs/console.md ("Token handling") for the trade-off.
 */
const REFRESH_KEY = 'platform.console.refresh_token';

let access: string | null = null;
let accessExpiresAt = 0;
let refreshTimer: ReturnType<typeof setTimeout> | undefined;
let refreshing: Promise<boolean> | null = null;
let state: SessionState = { user: null, passwordChangeRequired: false, endedBecause: null };
const listeners = new Set<(s: SessionState) => void>();

function setState(next: Partial<SessionState>): void {
  state = { ...state, ...next };
  for (const l of listeners) l(state);
}

export function sessionState(): SessionState {
  return state;
}

export function onSessionChange(listener: (s: SessionState) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function hasPermission(permission: string): boolean {
  const p = state.user?.permissions ?? [];
  return p.includes('*') || p.includes(permission);
}

async function postJson(path: string, body: unknown, token?: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`/api/v1${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify(body ?? {}),
    });
  } catch {
    throw new ApiError(0, 'NETWORK_ERROR', 'The platform could not be reached');
  }
  const json = (await res.json().catch(() => null)) as {
    success?: boolean;
    data?: unknown;
    error?: { code: string; message: string; details?: Record<string, unknown>; retry_after?: number };
    request_id?: string;
  } | null;
  if (!res.ok || !json?.success) {
    throw new ApiError(
      res.status,
      json?.error?.code ?? 'HTTP_ERROR',
      json?.error?.message ?? `HTTP ${res.status}`,
      json?.error?.details ?? {},
      json?.request_id,
      json?.error?.retry_after,
    );
  }
  return json.data;
}

function adopt(pair: TokenPair): void {
  access = pair.access_token;
  accessExpiresAt = Date.now() + pair.expires_in * 1000;
  sessionStorage.setItem(REFRESH_KEY, pair.refresh_token);
  clearTimeout(refreshTimer);
  // Refresh a minute before expiry (or at 80 % of a short lifetime), so calls never meet an expired token.
  const lead = Math.min(60_000, pair.expires_in * 200);
  refreshTimer = setTimeout(() => void refreshSession(), Math.max(1_000, pair.expires_in * 1000 - lead));
  setState({ user: pair.user, passwordChangeRequired: pair.password_change_required, endedBecause: null });
}

function forget(reason: string | null): void {
  access = null;
  accessExpiresAt = 0;
  clearTimeout(refreshTimer);
  sessionStorage.removeItem(REFRESH_KEY);
  setState({ user: null, passwordChangeRequired: false, endedBecause: reason });
}

export async function login(username: string, password: string): Promise<void> {
  const body = username.includes('@') ? { email: username, password } : { username, password };
  adopt((await postJson('/auth/login', body)) as TokenPair);
}

/**
 * Swaps the stored refresh token for a new pair. One refresh at a time: refresh tokens rotate, and a second
 * use of a rotated token would end the whole session.
 */
export function refreshSession(): Promise<boolean> {
  refreshing ??= (async () => {
    const token = sessionStorage.getItem(REFRESH_KEY);
    if (!token) return false;
    try {
      adopt((await postJson('/auth/refresh', { refresh_token: token })) as TokenPair);
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 0) {
        // Offline for a moment: keep the refresh token and try again shortly.
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(() => void refreshSession(), 5_000);
        return false;
      }
      if (err instanceof ApiError && !sessionEnded(err)) {
        refusedForNow(err);
        return false;
      }
      forget('Your session has ended. Please log in again.');
      return false;
    }
  })().finally(() => {
    refreshing = null;
  });
  return refreshing;
}

/** A refused refresh means the session is over only when the token itself was refused (401) or malformed. */
function sessionEnded(err: ApiError): boolean {
  return err.status === 401 || err.status === 400 || err.status === 422;
}

/**
 * A refresh refused for another reason (too many requests, maintenance, blocked address, a server error): the
 * refresh token was not spent, so it is kept, the user is told what happened, and the refresh is tried again
 * when the platform allows. The console stays while the access token still holds; else the login form shows why.
 */
function refusedForNow(err: ApiError): void {
  const wait = Math.max(1, Math.ceil(err.retryAfter ?? 10));
  const reason =
    err.status === 429
      ? `Too many requests, try again in ${wait} s.`
      : `The session could not be renewed: ${err.message}. Trying again in ${wait} s.`;
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => void refreshSession(), wait * 1000);
  if (access && Date.now() < accessExpiresAt) return;
  access = null;
  setState({ user: null, passwordChangeRequired: false, endedBecause: reason });
}

/** At start-up: resume this tab's session from its refresh token, if it has one. */
export async function restoreSession(): Promise<boolean> {
  if (!sessionStorage.getItem(REFRESH_KEY)) return false;
  return refreshSession();
}

/** The access token for the next call, refreshed first if it is about to expire. */
export async function accessToken(): Promise<string | null> {
  if (access && Date.now() > accessExpiresAt - 5_000) await refreshSession();
  return access;
}

/** Called by the API client when the server refused the token outright (revoked session, suspended user). */
export function sessionRejected(message: string): void {
  forget(message);
}

export function passwordChanged(): void {
  setState({ passwordChangeRequired: false });
}

export async function logout(): Promise<void> {
  const token = access;
  forget('You have logged out.');
  if (token) await postJson('/auth/logout', {}, token).catch(() => {});
}
