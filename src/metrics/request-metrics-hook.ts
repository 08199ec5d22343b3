import type { App } from '../http/app-type.js';
import type { RequestMetrics } from './request-metrics.js';

/**
 * Measures every response, refused ones included. Register it before the routes. Unknown paths share one
 * `unmatched` route label, so scanners cannot grow the series without bound.
 */
export function registerRequestMetrics(app: App, metrics: RequestMetrics): void {
  // A callback hook, not an async one: it runs on every response, and a promise per hook is measurable.
  app.addHook('onResponse', (request, reply, done) => {
    metrics.record(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime,
    );
    done();
  });
}
