/**
 * The baseline for the HTTP and WebSocket figures: a plain Fastify 5 app in its own process, with no hooks,
 * no authentication, no database. Its GET routes answer the bodies the platform answered for the same path
 * (read from the JSON file named as the first argument: {"/api/v1/status": {...}, ...}), serialized per
 * request, so both send the same bytes and the difference is the platform's own work.
 * Prints one JSON line {url} when ready; stops on SIGTERM.
 */
import { readFileSync } from 'node:fs';
import websocket from '@fastify/websocket';
import Fastify from 'fastify';

const bodies = process.argv[2]
  ? (JSON.parse(readFileSync(process.argv[2], 'utf8')) as Record<string, unknown>)
  : {};

const app = Fastify({ logger: false });
await app.register(websocket);
app.get('/api/v1/health', async () => ({ status: 'healthy', timestamp: new Date().toISOString() }));
for (const [path, body] of Object.entries(bodies)) app.get(path, async () => body);
// Idle connections only: the socket is kept open and nothing is sent.
app.get('/ws', { websocket: true }, () => {});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.on('SIGTERM', () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
