import { readFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { PlatformConfig } from '../config/config-schema.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { PROJECT_ROOT } from '../system/platform-info.js';
import { notBuiltPage } from './not-built-page.js';

/**
 * Console routes are public: the page and its assets hold no data, and every API call the page makes
 * carries the operator's token. They stay open in maintenance (an admin must be able to load the console to
 * turn maintenance off) and outside rate limits (the anonymous bucket of 100 an hour would otherwise lock an
 * operator out after a few dozen reloads, since each load fetches several files).
 */
const ROUTE_CONFIG = { access: access.public(), maintenanceExempt: true, rateLimitExempt: true };

/**
 * The page may talk only to this origin (REST and the event WebSocket); nothing inline, no frames.
 * `connect-src 'self'` covers same-origin ws:/wss: in current browsers (CSP Level 3).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Where the built console is: `console.dist_dir`, else `console/dist` of the installation. */
export function consoleDistDir(config: PlatformConfig): string {
  const configured = config.console.dist_dir;
  if (!configured) return join(PROJECT_ROOT, 'console', 'dist');
  return isAbsolute(configured) ? configured : resolve(configured);
}

/**
 * Serves the admin console, a single-page app built by Vite into `dist`: hashed assets under
 * `/console/assets/` (cached for a year) and `index.html` for `/console` and every other path below it, so
 * client-side routes survive a reload. An unbuilt console answers a short page saying how to build it.
 */
export async function registerConsoleRoutes(app: App, deps: { distDir: string }): Promise<void> {
  const indexFile = join(deps.distDir, 'index.html');

  const sendIndex = async (reply: FastifyReply) => {
    let html: Buffer;
    try {
      html = await readFile(indexFile);
    } catch {
      return reply
        .code(503)
        .header('cache-control', 'no-store')
        .type('text/html; charset=utf-8')
        .send(notBuiltPage());
    }
    return reply
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .type('text/html; charset=utf-8')
      .send(html);
  };

  const consoleScope: FastifyPluginAsync = async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...(route.config ?? {}), ...ROUTE_CONFIG };
    });
    await scope.register(fastifyStatic, {
      root: join(deps.distDir, 'assets'),
      prefix: '/console/assets/',
      decorateReply: false,
      index: false,
      wildcard: true,
      // The build writes .br and .gz beside each asset; they are sent to clients that accept them.
      preCompressed: true,
      maxAge: '365d',
      immutable: true,
      setHeaders: (res) => {
        res.setHeader('x-content-type-options', 'nosniff');
        res.setHeader('vary', 'accept-encoding');
      },
    });
    const hidden = { schema: { hide: true } };
    scope.get('/console', hidden, (_request, reply) => sendIndex(reply));
    scope.get('/console/*', hidden, (_request, reply) => sendIndex(reply));
  };
  await app.register(consoleScope);
}
