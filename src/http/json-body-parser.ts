import { AppError } from './app-error.js';
import type { App } from './app-type.js';

/**
 * How deep a request body may nest. Serializing, storing or signing a value recurses once per level, and a body
 * of 1 MiB can nest 500,000 deep (a stack overflow, which answered 500); no request of the interface needs more
 * than a few dozen levels. Event data has its own, lower limit naming the field (events/input-shape.ts).
 */
export const MAX_BODY_NESTING = 128;

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
    const tooDeep = nestingRefusal(body as string);
    if (tooDeep) {
      done(tooDeep, undefined);
      return;
    }
    // Callback style: the type also allows a promise, which this parser never returns.
    void parse(request, body as string, done);
  });
}

/** The refusal of a JSON body nested deeper than MAX_BODY_NESTING (for every parser of JSON bodies). */
export function nestingRefusal(text: string): AppError | undefined {
  if (!nestsTooDeep(text)) return undefined;
  return new AppError('VALIDATION_ERROR', `The request body nests deeper than ${MAX_BODY_NESTING} levels`, {
    details: { field: 'body', reason: `nested deeper than ${MAX_BODY_NESTING} levels` },
  });
}

/**
 * True when the JSON text opens more than MAX_BODY_NESTING objects or arrays at once (brackets inside strings do
 * not count). A shorter text cannot, so the usual small body is not scanned at all.
 */
function nestsTooDeep(text: string): boolean {
  if (text.length <= MAX_BODY_NESTING * 2) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_BODY_NESTING) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
