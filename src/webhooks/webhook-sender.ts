import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type { Agent } from 'undici';
import { parseRetryAfter } from './retry-schedule.js';
import { guardedConnector, TargetRefusedError } from './target-guard.js';

/** What one HTTP attempt came to. */
export interface SendOutcome {
  ok: boolean;
  /** The target's status, or null when no response came. */
  status: number | null;
  latencyMs: number;
  /** Why it failed, for the attempt record; null on success. */
  error: string | null;
  /** The target's `Retry-After`, in milliseconds. */
  retryAfterMs: number | undefined;
  /** A refused target: retrying cannot help until the configuration changes. */
  refused: boolean;
  /** Aborted because the dispatcher stopped: not an attempt at all. */
  aborted: boolean;
}

// Enough of a response to keep the connection reusable; anything longer is cut and the socket dropped.
const RESPONSE_LIMIT = 64 * 1024;
const require = createRequire(import.meta.url);

/**
 * Posts webhook requests through one keep-alive undici agent (a pool per target origin). Redirects are not
 * followed: a 3xx is a failed attempt, so a target cannot bounce a delivery to an address it may not reach.
 */
export class WebhookSender {
  private agent: Agent | undefined;
  private stopping = false;
  private readonly controllers = new Set<AbortController>();
  private readonly targets = new Map<string, { origin: string; path: string }>();

  constructor(private readonly allowPrivate: () => boolean) {}

  /** Drops pooled connections (after `webhooks.allow_private_targets` changed, so none outlives the rule). */
  async reset(): Promise<void> {
    const old = this.agent;
    this.agent = undefined;
    await old?.close().catch(() => {});
  }

  async close(): Promise<void> {
    await this.agent?.destroy().catch(() => {});
  }

  /**
   * Loads undici and makes the pool now, off the request path: loading it took over 100 ms on this machine,
   * which the first deliveries after a start (or after the first subscription) would otherwise wait for.
   */
  warm(): void {
    if (this.agent !== undefined || this.stopping) return;
    setImmediate(() => {
      if (!this.stopping) this.pool();
    });
  }

  /** Aborts every request under way; they answer `aborted` (the dispatcher hands their rows back). */
  abortAll(): void {
    this.stopping = true;
    for (const controller of this.controllers) controller.abort();
  }

  async post(
    url: string,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
  ): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round((performance.now() - started) * 1000) / 1000;
    if (this.stopping) return failure(0, 'aborted: the dispatcher stopped', { aborted: true });
    // One controller and one timer per request: cheaper than composing AbortSignal.timeout with a stop signal.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    this.controllers.add(controller);
    try {
      const target = this.target(url);
      const res = await this.pool().request({
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers,
        body,
        signal: controller.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      await res.body.dump({ limit: RESPONSE_LIMIT }).catch(() => {});
      const status = res.statusCode;
      const ok = status >= 200 && status < 300;
      return {
        ok,
        status,
        latencyMs: elapsed(),
        error: ok ? null : statusError(status),
        retryAfterMs: ok ? undefined : parseRetryAfter(res.headers['retry-after']),
        refused: false,
        aborted: false,
      };
    } catch (err) {
      const latencyMs = elapsed();
      if (timedOut) return failure(latencyMs, `timeout: no complete response within ${timeoutMs} ms`);
      if (this.stopping) return failure(latencyMs, 'aborted: the dispatcher stopped', { aborted: true });
      const refused = findRefusal(err);
      if (refused) return failure(latencyMs, `refused: ${refused.message}`, { refused: true });
      return failure(latencyMs, describe(err));
    } finally {
      clearTimeout(timer);
      this.controllers.delete(controller);
    }
  }

  private target(url: string): { origin: string; path: string } {
    let target = this.targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      if (this.targets.size > 10_000) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }

  /** The pool, made on the first delivery: undici is loaded then, not at start-up. */
  private pool(): Agent {
    this.agent ??= this.createAgent();
    return this.agent;
  }

  private createAgent(): Agent {
    const { Agent } = require('undici') as typeof import('undici');
    return new Agent({
      connect: guardedConnector(this.allowPrivate, 10_000),
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 120_000,
      // No redirect interceptor is composed in: a 3xx reaches the dispatcher as is.
    });
  }
}

function failure(
  latencyMs: number,
  error: string,
  flags: { refused?: boolean; aborted?: boolean } = {},
): SendOutcome {
  return {
    ok: false,
    status: null,
    latencyMs,
    error,
    retryAfterMs: undefined,
    refused: flags.refused ?? false,
    aborted: flags.aborted ?? false,
  };
}

function statusError(status: number): string {
  if (status >= 300 && status < 400) return `HTTP ${status}: redirects are not followed`;
  return `HTTP ${status}`;
}

function findRefusal(err: unknown): TargetRefusedError | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current; depth++) {
    if (current instanceof TargetRefusedError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const text = err.message || err.name;
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
}
