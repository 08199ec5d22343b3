import type { Permission } from '../auth/roles.js';

/**
 * What a route requires, declared once in its definition (`config.access`). The guard enforces it
 * and the OpenAPI document prints it in the route's description.
 */
export type Access =
  | { kind: 'public' }
  | { kind: 'authenticated' }
  | { kind: 'permission'; permission: Permission }
  | { kind: 'admin'; scope: AdminScope };

export type AdminScope = Extract<Permission, `admin:${string}`>;

export const access = {
  public: (): Access => ({ kind: 'public' }),
  authenticated: (): Access => ({ kind: 'authenticated' }),
  permission: (permission: Permission): Access => ({ kind: 'permission', permission }),
  /** `/api/v1/admin/*`, event replay, purge and audit: the admin role, plus the area's admin scope. */
  admin: (scope: AdminScope): Access => ({ kind: 'admin', scope }),
};

export function describeAccess(a: Access): string {
  switch (a.kind) {
    case 'public':
      return 'No authentication required.';
    case 'authenticated':
      return 'Requires any authenticated caller.';
    case 'permission':
      return `Requires permission \`${a.permission}\`.`;
    case 'admin':
      return `Requires the admin role and scope \`${a.scope}\`.`;
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    /** Routes that stay open while maintenance mode is on. */
    maintenanceExempt?: boolean;
    /** Routes outside rate limiting (health, ready). */
    rateLimitExempt?: boolean;
    /** Routes counted in the authentication bucket (10 per 10 minutes per IP by default). */
    authBucket?: boolean;
    /**
     * With authBucket: only refused requests count in the authentication bucket, and the handler counts them
     * (RateLimiter.countRefused); answered ones count in their user's bucket (RateLimiter.countAnswered). The
     * token refresh: renewing a valid session is not guessing a secret.
     */
    authBucketOnRefusal?: boolean;
    /** Public at the gates, but the handler applies the rule of what it serves (plugin routes): it answers 401. */
    accessInHandler?: boolean;
    /** Stream routes also take the credential as `?token=` (browsers cannot set headers on EventSource). */
    queryToken?: boolean;
    /** The maintenance switch itself stays open to admins even when admin access is off. */
    maintenanceToggle?: boolean;
  }
}
