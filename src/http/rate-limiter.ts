import type { FastifyReply, FastifyRequest } from 'fastify';
import { createMemorySharedState } from '../cluster/memory/memory-shared-state.js';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from './app-error.js';

/**
 * Fixed-window limits (decisions §3): per principal when authenticated, per client IP otherwise, and a
 * tighter per-IP bucket for credential endpoints. Counters live in the shared state, so in cluster mode
 * the limit holds across instances.
 */
export class RateLimiter {
  // While Redis cannot be reached, each instance counts alone rather than refusing every request: events,
  // webhooks and streams keep working without Redis, and limits still hold per instance.
  private readonly local = createMemorySharedState();

  constructor(
    private readonly shared: SharedState,
    private readonly config: () => PlatformConfig,
  ) {}

  async check(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const limits = this.config().rate_limits;
    if (!limits.enabled || request.routeOptions.config?.rateLimitExempt) return;
    const p = request.principal;
    const [bucket, key] = request.routeOptions.config?.authBucket
      ? (['auth', `auth:${request.ip}`] as const)
      : p
        ? (['authenticated', `p:${p.apiKeyId ?? p.userId}`] as const)
        : (['anonymous', `ip:${request.ip}`] as const);
    const { max, window_seconds: windowSeconds } = limits[bucket];
    const { count, resetAt } = await this.shared
      .hit(`${bucket}:${key}`, windowSeconds)
      .catch(() => this.local.hit(`${bucket}:${key}`, windowSeconds));
    const resetSeconds = Math.ceil(resetAt / 1000);
    reply.header('x-ratelimit-limit', String(max));
    reply.header('x-ratelimit-remaining', String(Math.max(0, max - count)));
    reply.header('x-ratelimit-reset', String(resetSeconds));
    reply.header('x-ratelimit-window', String(windowSeconds));
    if (count > max) {
      const retryAfter = Math.max(1, resetSeconds - Math.floor(Date.now() / 1000));
      throw new AppError(
        'RATE_LIMIT_EXCEEDED',
        `Rate limit of ${max} requests per ${windowSeconds} s exceeded`,
        {
          retryAfter,
          details: { bucket, limit: max, window_seconds: windowSeconds },
        },
      );
    }
  }
}
