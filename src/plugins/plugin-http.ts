import { createRequire } from 'node:module';
import type { Agent } from 'undici';
import { guardedConnector, TargetRefusedError } from '../webhooks/target-guard.js';

/** The largest response body `ctx.http.fetch` reads; a longer one fails the call. */
export const PLUGIN_FETCH_BODY_LIMIT = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMEOUT_MS = 60_000;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const require = createRequire(import.meta.url);

/** What `ctx.http.fetch` answers: the response as plain data. */
export interface PluginFetchResult {
  status: number;
  ok: boolean;
  headers: Record<string, string>;
  body: string;
}

/**
 * The platform side of `ctx.http.fetch`: the outgoing requests of plugins go through the connector webhooks
 * use (src/webhooks/target-guard.ts), so `webhooks.allow_private_targets` rules them too: loopback, private,
 * link-local and metadata addresses are refused unless it is on, by every address a name resolves to and by
 * the address actually connected. Redirects are never followed (a 3xx is answered as it is). A failure names
 * the method, the target's host and the cause.
 */
export class PluginHttpClient {
  private agent: Agent | undefined;
  private agentAllows: boolean | undefined;

  constructor(private readonly allowPrivate: () => boolean) {}

  async close(): Promise<void> {
    await this.agent?.destroy().catch(() => {});
    this.agent = undefined;
  }

  async fetch(url: unknown, init: unknown): Promise<PluginFetchResult> {
    const options = (init && typeof init === 'object' ? init : {}) as Record<string, unknown>;
    const target = parseTarget(url);
    const method = typeof options['method'] === 'string' ? options['method'].toUpperCase() : 'GET';
    if (!METHODS.has(method)) throw new TypeError(`ctx.http.fetch: unsupported method '${method}'`);
    const headers = stringRecord(options['headers'], 'headers');
    const body = options['body'];
    if (body !== undefined && body !== null && typeof body !== 'string')
      throw new TypeError('ctx.http.fetch: the body must be a string');
    const requested = options['timeout_ms'];
    const timeoutMs =
      typeof requested === 'number' && Number.isFinite(requested) && requested > 0
        ? Math.min(Math.ceil(requested), MAX_TIMEOUT_MS)
        : DEFAULT_TIMEOUT_MS;
    const { request } = require('undici') as typeof import('undici');
    const fail = (cause: string) => new Error(`ctx.http.fetch: ${method} ${target.host} failed: ${cause}`);
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await request(target, {
        dispatcher: this.pool(),
        method: method as 'GET',
        headers,
        ...(typeof body === 'string' ? { body } : {}),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > PLUGIN_FETCH_BODY_LIMIT) {
          res.body.destroy();
          throw fail(`the response body exceeds ${PLUGIN_FETCH_BODY_LIMIT} bytes`);
        }
        chunks.push(chunk as Buffer);
      }
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers)) {
        if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      return {
        status: res.statusCode,
        ok: res.statusCode >= 200 && res.statusCode < 300,
        headers: out,
        body: Buffer.concat(chunks).toString('utf8'),
      };
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('ctx.http.fetch:')) throw err;
      if (signal.aborted) throw fail(`no complete response within ${timeoutMs} ms`);
      throw fail(causeOf(err));
    }
  }

  /** One keep-alive pool, made anew when `webhooks.allow_private_targets` changed (no connection outlives it). */
  private pool(): Agent {
    const allows = this.allowPrivate();
    if (this.agent && this.agentAllows === allows) return this.agent;
    void this.agent?.close().catch(() => {});
    const { Agent } = require('undici') as typeof import('undici');
    this.agentAllows = allows;
    this.agent = new Agent({
      connect: guardedConnector(this.allowPrivate, 10_000),
      keepAliveTimeout: 10_000,
      // No redirect interceptor is composed in: a 3xx is answered to the plugin as it is.
    });
    return this.agent;
  }
}

function parseTarget(url: unknown): URL {
  if (typeof url !== 'string') throw new TypeError('ctx.http.fetch: the URL must be a string');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError('ctx.http.fetch: the URL is not a valid absolute URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TypeError(`ctx.http.fetch: only http and https URLs are fetched, not ${parsed.protocol}`);
  if (parsed.username || parsed.password)
    throw new TypeError('ctx.http.fetch: credentials go in a header, not in the URL');
  return parsed;
}

function stringRecord(value: unknown, what: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new TypeError(`ctx.http.fetch: ${what} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new TypeError(`ctx.http.fetch: the header '${k}' must be a string`);
    out[k] = v;
  }
  return out;
}

/** The cause of a failed request: the refusal of the target guard, or the deepest error's code and message. */
function causeOf(err: unknown): string {
  let current: unknown = err;
  let deepest: Error | undefined;
  for (let depth = 0; depth < 6 && current instanceof Error; depth++) {
    if (current instanceof TargetRefusedError) return `refused: ${current.message}`;
    // An AggregateError (every address of a name failed) carries its causes in `errors`.
    const inner = (current as { errors?: unknown[] }).errors?.[0];
    deepest = current;
    current = current.cause ?? inner;
  }
  if (!deepest) return String(err);
  const code = (deepest as { code?: unknown }).code;
  const text = deepest.message || deepest.name;
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
}
