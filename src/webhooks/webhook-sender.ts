import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type { Agent, Dispatcher } from 'undici';
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
  private readonly inFlight = new Set<Attempt>();
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
    for (const attempt of this.inFlight) attempt.stop();
  }

  /**
   * One POST through the pool's dispatch API: a small handler reads the status and the `Retry-After` header
   * and counts the body away, with no response stream, promise chain or AbortController per request (the
   * `request()` API's cost per delivery). The whole attempt is bounded by `timeoutMs`.
   */
  post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendOutcome> {
    if (this.stopping)
      return Promise.resolve(failure(0, 'aborted: the dispatcher stopped', { aborted: true }));
    const target = this.target(url);
    return new Promise((resolve) => {
      const attempt = new Attempt(resolve, timeoutMs, (a) => this.inFlight.delete(a));
      this.inFlight.add(attempt);
      try {
        this.pool().dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: 'POST',
            headers,
            body,
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
          },
          attempt,
        );
      } catch (err) {
        attempt.onResponseError(undefined, err as Error);
      }
    });
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

/**
 * The handler of one request (undici's dispatch handler interface): it settles once, with the first of its
 * response, its error, its timeout or the dispatcher's stop.
 */
class Attempt implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private readonly timer: NodeJS.Timeout;
  private controller: Dispatcher.DispatchController | undefined;
  private ended: 'timeout' | 'stopped' | undefined;
  private status = 0;
  private retryAfter: string | undefined;
  private received = 0;
  private settled = false;

  constructor(
    private readonly resolve: (outcome: SendOutcome) => void,
    private readonly timeoutMs: number,
    private readonly done: (attempt: Attempt) => void,
  ) {
    this.timer = setTimeout(() => this.end('timeout'), timeoutMs);
  }

  /** The dispatcher is stopping: the attempt is no attempt at all. */
  stop(): void {
    this.end('stopped');
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Timed out or stopped while it waited for a connection: it leaves now, not later.
    if (this.ended !== undefined) controller.abort(new Error(this.ended));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.status = statusCode;
    const retryAfter = headers['retry-after'];
    this.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.received += chunk.length;
    // Enough of a body to keep the connection reusable; a longer one is cut (the socket is dropped).
    if (this.received > RESPONSE_LIMIT) {
      this.settle(this.answered());
      controller.abort(new Error('response body too long'));
    }
  }

  onResponseEnd(): void {
    this.settle(this.answered());
  }

  onResponseError(_controller: unknown, err: Error): void {
    const latencyMs = this.elapsed();
    if (this.ended === 'timeout') {
      this.settle(failure(latencyMs, `timeout: no complete response within ${this.timeoutMs} ms`));
    } else if (this.ended === 'stopped') {
      this.settle(failure(latencyMs, 'aborted: the dispatcher stopped', { aborted: true }));
    } else {
      const refused = findRefusal(err);
      this.settle(
        refused
          ? failure(latencyMs, `refused: ${refused.message}`, { refused: true })
          : failure(latencyMs, describe(err)),
      );
    }
  }

  private end(why: 'timeout' | 'stopped'): void {
    if (this.settled || this.ended !== undefined) return;
    this.ended = why;
    if (this.controller) this.controller.abort(new Error(why));
    // Not yet on a connection: answered now; onRequestStart aborts it if it ever gets one.
    else this.onResponseError(undefined, new Error(why));
  }

  private answered(): SendOutcome {
    const status = this.status;
    const ok = status >= 200 && status < 300;
    return {
      ok,
      status,
      latencyMs: this.elapsed(),
      error: ok ? null : statusError(status),
      retryAfterMs: ok ? undefined : parseRetryAfter(this.retryAfter),
      refused: false,
      aborted: false,
    };
  }

  private settle(outcome: SendOutcome): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.done(this);
    this.resolve(outcome);
  }

  private elapsed(): number {
    return Math.round((performance.now() - this.started) * 1000) / 1000;
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
