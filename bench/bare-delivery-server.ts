/**
 * The baseline of bench/delivery-latency.ts: a bare Fastify 5 route in its own process that stores each
 * event with the platform's SQLite driver and sync setting (WAL, `synchronous = FULL`, one row per event,
 * committed before the answer), answers 201, and posts the event at once, signed as the platform signs
 * (`signatureHeaders`), from the same process to its target over a keep-alive undici pool with the platform's
 * default concurrency per subscription (4). No authentication, no outbox, no bookkeeping.
 *
 * The event's type names its target: `latency.s<i>` goes to the i-th URL of the JSON argument
 * `{"targets": [...], "secret": "..."}`. Prints {url} when ready; stops on SIGTERM.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { Pool } from 'undici';
import { SqliteDriver } from '../src/storage/sqlite/better-sqlite3.js';
import { signatureHeaders } from '../src/webhooks/webhook-signature.js';

const { targets, secret } = JSON.parse(process.argv[2] ?? '{}') as { targets: string[]; secret: string };
const dir = mkdtempSync(join(tmpdir(), 'bare-delivery-'));
const db = new SqliteDriver(join(dir, 'bare.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec(
  'create table events (id text primary key, event_type text not null, data text not null, created_at text not null)',
);
const insert = db.prepare('insert into events (id, event_type, data, created_at) values (?, ?, ?, ?)');
const pools = targets.map((t) => {
  const url = new URL(t);
  return { pool: new Pool(url.origin, { connections: 4 }), path: url.pathname };
});

interface Emitted {
  event_type: string;
  source?: string;
  data: Record<string, unknown>;
}

const post = async (target: (typeof pools)[number], id: string, body: string) => {
  const headers = {
    'content-type': 'application/json',
    ...signatureHeaders(secret, id, Math.floor(Date.now() / 1000), body),
  };
  try {
    const res = await target.pool.request({ path: target.path, method: 'POST', headers, body });
    await res.body.dump();
  } catch {
    // A lost delivery shows as a missing receipt in the benchmark's count.
  }
};

const app = Fastify({ logger: false });
app.post('/api/v1/events', async (req, reply) => {
  const event = req.body as Emitted;
  const id = randomUUID();
  const at = new Date().toISOString();
  insert.run(id, event.event_type, JSON.stringify(event.data), at);
  const index = Number(event.event_type.slice('latency.s'.length));
  const target = pools[index] ?? pools[0]!;
  const body = JSON.stringify({
    event_id: id,
    event_type: event.event_type,
    source: event.source ?? null,
    data: event.data,
    timestamp: at,
  });
  void post(target, id, body);
  reply.code(201);
  return { data: { event_id: id } };
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.on('SIGTERM', () => {
  app.close().then(
    () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    },
    () => process.exit(1),
  );
});
