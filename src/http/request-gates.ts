import type { FastifyReply, FastifyRequest } from 'fastify';
import { API_KEY_PREFIX } from '../auth/api-key-store.js';
import type { AuthService } from '../auth/auth-service.js';
import { hasPermission, type Principal } from '../auth/principal.js';
import type { BlockedIps } from '../security/blocked-ips.js';
import { stripForwardedPorts } from '../security/ip-ranges.js';
import type { Maintenance } from '../system/maintenance.js';
import type { Access } from './access.js';
import { AppError } from './app-error.js';
import type { App } from './app-type.js';
import { sendError, toAppError } from './error-handler.js';
import type { RateLimiter } from './rate-limiter.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
}

const unauthenticated = () =>
  new AppError('AUTHENTICATION_FAILED', 'Authentication is required', {
    details: { reason: 'missing_credentials' },
    headers: { 'www-authenticate': 'Bearer' },
  });

/**
 * Reads the credentials of a request: `Authorization: Bearer`, `X-API-Key`, or `?token=` on stream routes.
 * An API key (`plat_…`) is taken in the Bearer header too: clients that only know Bearer credentials, such as
 * Prometheus's `authorization` setting for `/metrics`, can use one.
 */
export function credentialsOf(request: FastifyRequest): { bearer?: string; apiKey?: string } {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.length > 0) {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? '';
    return token.startsWith(API_KEY_PREFIX) ? { apiKey: token } : { bearer: token };
  }
  const key = request.headers['x-api-key'];
  if (typeof key === 'string' && key.length > 0) return { apiKey: key };
  if (request.routeOptions.config?.queryToken) {
    const token = (request.query as Record<string, unknown> | undefined)?.['token'];
    if (typeof token === 'string' && token.length > 0)
      return token.startsWith(API_KEY_PREFIX) ? { apiKey: token } : { bearer: token };
  }
  return {};
}

/** Throws the coded refusal when the principal may not use a route. */
export function enforceAccess(rule: Access, principal: Principal | undefined): void {
  if (rule.kind === 'public') return;
  if (!principal) throw unauthenticated();
  switch (rule.kind) {
    case 'authenticated':
      return;
    case 'permission':
      if (hasPermission(principal, rule.permission)) return;
      throw new AppError(
        rule.permission.startsWith('events:') ? 'INSUFFICIENT_EVENT_PERMISSIONS' : 'AUTHORIZATION_DENIED',
        `Permission '${rule.permission}' is required`,
        { details: { required_permission: rule.permission } },
      );
    case 'admin':
      if (!principal.isAdmin)
        throw new AppError('ADMIN_REQUIRED', undefined, { details: { required_role: 'admin' } });
      if (hasPermission(principal, rule.scope)) return;
      throw new AppError('INSUFFICIENT_ADMIN_PERMISSIONS', `Scope '${rule.scope}' is required`, {
        details: { required_permission: rule.scope },
      });
  }
}

/**
 * The gates every request passes, in order: blocked IPs (before any other work), credentials,
 * rate limits, maintenance mode, then the route's declared access rule.
 */
export function registerRequestGates(
  app: App,
  deps: { blockedIps: BlockedIps; auth: AuthService; rateLimiter: RateLimiter; maintenance: Maintenance },
): void {
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    stripForwardedPorts(request.raw.headers);
    try {
      const blocked = deps.blockedIps.find(request.ip);
      if (blocked) {
        throw new AppError('AUTHORIZATION_DENIED', 'Requests from this address are blocked', {
          details: { reason: 'ip_blocked' },
        });
      }
      const config = request.routeOptions.config;
      const rule = config?.access;
      let authError: AppError | undefined;
      try {
        request.principal = await deps.auth.authenticate(credentialsOf(request));
      } catch (err) {
        authError = toAppError(err, request);
      }
      await deps.rateLimiter.check(request, reply);
      const maintenance = deps.maintenance.current();
      if (maintenance.enabled && !config?.maintenanceExempt && rule) {
        const adminPasses =
          request.principal?.isAdmin && (maintenance.allow_admin_access || config?.maintenanceToggle);
        if (!adminPasses) {
          throw new AppError('SYSTEM_LOCKED', maintenance.message || undefined, {
            details: {
              message: maintenance.message,
              estimated_end: maintenance.estimated_end,
              estimated_duration_minutes: maintenance.estimated_duration_minutes,
            },
          });
        }
      }
      // Fail closed: a route that forgot to declare its access rule is refused, never public. Only unmatched
      // paths (the 404 answer) have no rule.
      if (!rule && !request.is404) {
        throw new AppError('AUTHORIZATION_DENIED', 'This route declares no access rule', {
          details: { reason: 'no_access_rule' },
        });
      }
      if (!rule || rule.kind === 'public') return;
      if (authError) throw authError;
      enforceAccess(rule, request.principal);
    } catch (err) {
      return sendError(reply, request, toAppError(err, request));
    }
  });
}
