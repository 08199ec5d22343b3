import { errors, jwtVerify, SignJWT } from 'jose';
import { newId } from '../kernel/new-id.js';

export interface AccessClaims {
  sub: string;
  sid: string;
  scope: string;
  jti: string;
}

/** Signs and verifies the platform's access tokens (HS256 JWTs). */
export class AccessTokens {
  private readonly key: Uint8Array;

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
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], issuer: 'platform' });
      if (typeof payload.sub !== 'string' || typeof payload['sid'] !== 'string') return undefined;
      return {
        sub: payload.sub,
        sid: payload['sid'],
        scope: typeof payload['scope'] === 'string' ? payload['scope'] : '',
        jti: typeof payload.jti === 'string' ? payload.jti : '',
      };
    } catch (err) {
      if (err instanceof errors.JOSEError || err instanceof TypeError) return undefined;
      throw err;
    }
  }
}
