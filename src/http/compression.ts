import compress from '@fastify/compress';
import type { App } from './app-type.js';

/**
 * Answers of 8 KiB and more are compressed when the client accepts it (brotli at quality 4, gzip or deflate):
 * the OpenAPI document (1.6 MB) goes out in about a tenth of that, an event page of 100 in a fifth. Smaller
 * answers — almost every API answer — are sent as they are: compressing them costs more CPU than it saves on
 * the wire. Streams are not touched: SSE writes to its hijacked socket, WebSocket frames bypass replies.
 */
export async function registerCompression(app: App): Promise<void> {
  await app.register(compress, { global: true, threshold: 8192, encodings: ['br', 'gzip', 'deflate'] });
}
