import type { FastifyRequest } from 'fastify';
import type { AuthService } from '../auth/auth-service.js';
import { hasPermission } from '../auth/principal.js';
import { AppError } from '../http/app-error.js';
import { credentialsOf } from '../http/request-gates.js';
import type { Reader } from './stream-connection.js';

/** The credentials a stream was opened with, checked again while it stays open. */
export interface StreamCredentials {
  /**
   * The reader as it is now (an admin may have been demoted); undefined once the session, API key or user no
   * longer holds, or lost `events:subscribe`. Rejects when they could not be checked (the store unreachable).
   */
  recheck(): Promise<Reader | undefined>;
  /** Calls `changed` whenever the platform hears of a change that may concern them; returns the stop function. */
  watch(changed: () => void): () => void;
}

/** The credentials of a stream request (undefined without a principal), checked with `auth`. */
export function streamCredentials(request: FastifyRequest, auth: AuthService): StreamCredentials | undefined {
  const principal = request.principal;
  if (!principal) return undefined;
  // An API key is checked by itself (it is stored hashed); a session by its id, not by the access token,
  // whose expiry does not end a stream it opened.
  const { apiKey } = credentialsOf(request);
  return {
    async recheck() {
      try {
        const now = await auth.recheck(principal, apiKey === undefined ? {} : { apiKey });
        if (!hasPermission(now, 'events:subscribe')) return undefined;
        return { userId: now.userId, isAdmin: now.isAdmin, permissions: now.permissions };
      } catch (err) {
        if (err instanceof AppError && err.code === 'AUTHENTICATION_FAILED') return undefined;
        throw err;
      }
    },
    watch(changed) {
      return auth.onInvalidated((m) => {
        if (
          m.userId === principal.userId ||
          (principal.sessionId !== undefined && m.sessionIds?.includes(principal.sessionId)) ||
          (principal.apiKeyId !== undefined && m.apiKeyId === principal.apiKeyId)
        ) {
          changed();
        }
      });
    },
  };
}

/**
 * Checks one stream's credentials again when asked (each heartbeat) and whenever the platform hears of a change
 * that may concern them, one check at a time: a change heard during a check is checked again after it, as
 * that check may have read what was there before. `outcome` gets the reader as it is now, or undefined once
 * the credentials no longer hold; a check that could not be made (the store unreachable) changes nothing.
 */
export class CredentialCheck {
  private checking = false;
  private again = false;
  private stopped = false;
  private readonly unwatch: () => void;

  constructor(
    private readonly credentials: StreamCredentials,
    private readonly outcome: (reader: Reader | undefined) => void,
  ) {
    this.unwatch = credentials.watch(() => this.run());
  }

  run(): void {
    if (this.stopped) return;
    if (this.checking) {
      this.again = true;
      return;
    }
    this.checking = true;
    this.again = false;
    void this.credentials
      .recheck()
      .then((reader) => {
        if (!this.stopped) this.outcome(reader);
      })
      .catch(() => {})
      .then(() => {
        this.checking = false;
        if (this.again) this.run();
      });
  }

  stop(): void {
    this.stopped = true;
    this.unwatch();
  }
}
