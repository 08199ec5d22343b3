import { errors, jwtVerify, SignJWT } from 'jose';
import { newId } from '../kernel/new-id.js';

export interface AccessClaims {
  sub: string;
  sid: string;
  scope: string;
  jti: string;
}

const MAX_CACHED = 10_000;

/** Signs and verifies the platform's access tokens (HS256 JWTs). */
export class AccessTokens {
  private readonly key: Uint8Array;
  /**
   * Tokens already verified, until they expire. An HS256 signature check costs more than the rest of a typical
   * request; a token that verified once stays valid until its `exp` (revocation is checked per session, apart).
   */
  private readonly verified = new Map<string, { claims: AccessClaims; expiresAt: number }>();

  constructor(secret: string) {
    this.key = new TextEncoder().encode(secret);
  }

  async sign(
    userId: string,
    sessionId: string,
    permissions: readonly string[],
    ttlSeconds: number,
  ): Promise<string> {
    return new SignJWT({ sid: sessionId, scope: permissions.join(' ') })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setJti(newId('jti'))
      .setIssuer('platform')
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
      .sign(this.key);
  }

  /** Resolves to the claims, or undefined for any token that is malformed, forged, expired or of another algorithm. */
  async verify(token: string): Promise<AccessClaims | undefined> {
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.expiresAt > Date.now()) return cached.claims;
      this.verified.delete(token);
    }
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], issuer: 'platform' });
      if (typeof payload.sub !== 'string' || typeof payload['sid'] !== 'string') return undefined;
      const claims: AccessClaims = {
        sub: payload.sub,
        sid: payload['sid'],
        scope: typeof payload['scope'] === 'string' ? payload['scope'] : '',
        jti: typeof payload.jti === 'string' ? payload.jti : '',
      };
      if (typeof payload.exp === 'number') {
        if (this.verified.size >= MAX_CACHED)
          this.verified.delete(this.verified.keys().next().value as string);
        this.verified.set(token, { claims, expiresAt: payload.exp * 1000 });
      }
      return claims;
    } catch (err) {
      if (err instanceof errors.JOSEError || err instanceof TypeError) return undefined;
      throw err;
    }
  }
}
