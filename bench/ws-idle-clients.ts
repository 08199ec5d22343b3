/**
 * Opens N idle WebSocket connections to one address from this process (never the server's), at most 200
 * handshakes at a time. Prints one JSON line {opened, failed, first_error} once every attempt has settled,
 * then holds the connections until SIGTERM.
 *
 *   tsx bench/ws-idle-clients.ts ws://127.0.0.1:8080/api/v1/events/stream?token=… 10000
 */
import { WebSocket } from 'ws';

const target = process.argv[2];
const count = Number(process.argv[3] ?? '1000');
if (!target || !Number.isInteger(count) || count < 1) {
  process.stderr.write('usage: ws-idle-clients <ws-url> <count>\n');
  process.exit(2);
}

const sockets: WebSocket[] = [];
let opened = 0;
let failed = 0;
let firstError: string | undefined;

const openOne = () =>
  new Promise<void>((resolve) => {
    const ws = new WebSocket(target, { perMessageDeflate: false });
    sockets.push(ws);
    // Frames the server sends (heartbeats) are read and dropped, as an idle client would.
    ws.on('message', () => {});
    ws.once('open', () => {
      opened += 1;
      resolve();
    });
    ws.once('error', (err) => {
      failed += 1;
      firstError ??= err.message;
      resolve();
    });
  });

let next = 0;
const worker = async () => {
  while (next < count) {
    next += 1;
    await openOne();
  }
};
await Promise.all(Array.from({ length: Math.min(200, count) }, worker));
process.stdout.write(`${JSON.stringify({ opened, failed, first_error: firstError ?? null })}\n`);

process.on('SIGTERM', () => {
  for (const ws of sockets) ws.terminate();
  process.exit(0);
});
