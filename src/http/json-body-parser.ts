import type { App } from './app-type.js';

/**
 * Fastify's own JSON parser (prototype poisoning refused), except that an empty body is no body. Client
 * libraries often send `Content-Type: application/json` on every request; a DELETE or a logout sent that way
 * is answered, not refused as malformed JSON. A route that needs a body still says so ("A JSON request body
 * is required", 400).
 */
export function registerJsonBodyParser(app: App): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') {
      done(null, undefined);
      return;
    }
    // Callback style: the type also allows a promise, which this parser never returns.
    void parse(request, body as string, done);
  });
}
