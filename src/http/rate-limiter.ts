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
  /** Requests this instance refused, by bucket (GET /metrics). */
  readonly refusals = { auth: 0, authenticated: 0, anonymous: 0 };

  constructor(
    private readonly shared: SharedState,
    private readonly config: () => PlatformConfig,
  ) {}

  async check(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const config = request.routeOptions.config;
    if (config?.rateLimitExempt || config?.authBucketOnRefusal) return;
    const p = request.principal;
    const [bucket, key] = config?.authBucket
      ? (['auth', `auth:${request.ip}`] as const)
      : p
        ? (['authenticated', `p:${p.apiKeyId ?? p.userId}`] as const)
        : (['anonymous', `ip:${request.ip}`] as const);
    await this.count(reply, bucket, key, true);
  }

  /**
   * Whether the client's authentication bucket already holds as many requests as it allows (its next refusal
   * is answered 429), read without counting: an `authBucketOnRefusal` route asks before its work (a refresh's
   * write transaction), so that a client past the limit costs a counter read, not that work.
   */
  async authBucketFull(request: FastifyRequest): Promise<boolean> {
    const limits = this.config().rate_limits;
    if (!limits.enabled) return false;
    const { max, window_seconds: windowSeconds } = limits.auth;
    const name = `auth:auth:${request.ip}`;
    const { count } = await this.shared
      .peek(name, windowSeconds)
      .catch(() => this.local.peek(name, windowSeconds));
    return count >= max;
  }

  /**
   * A refused request of an `authBucketOnRefusal` route (a refresh token that is not valid): counted in the
   * client's authentication bucket like a wrong password; past the limit, answered 429 instead.
   */
  async countRefused(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    await this.count(reply, 'auth', `auth:${request.ip}`, true);
  }

  /**
   * An answered request of an `authBucketOnRefusal` route, counted in its user's bucket (for the headers and the
   * user's later requests) but never refused: the refresh token is already spent, and refusing the answer would
   * lose the session.
   */
  async countAnswered(reply: FastifyReply, userId: string): Promise<void> {
    await this.count(reply, 'authenticated', `p:${userId}`, false);
  }

  private async count(
    reply: FastifyReply,
    bucket: 'auth' | 'authenticated' | 'anonymous',
    key: string,
    refuse: boolean,
  ): Promise<void> {
    const limits = this.config().rate_limits;
    if (!limits.enabled) return;
    const { max, window_seconds: windowSeconds } = limits[bucket];
    const { count, resetAt } = await this.shared
      .hit(`${bucket}:${key}`, windowSeconds)
      .catch(() => this.local.hit(`${bucket}:${key}`, windowSeconds));
    const resetSeconds = Math.ceil(resetAt / 1000);
    reply.header('x-ratelimit-limit', String(max));
    reply.header('x-ratelimit-remaining', String(Math.max(0, max - count)));
    reply.header('x-ratelimit-reset', String(resetSeconds));
    reply.header('x-ratelimit-window', String(windowSeconds));
    if (refuse && count > max) {
      this.refusals[bucket] += 1;
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
