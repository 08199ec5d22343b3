/**
 * The durable-emit limit of bench/emit-throughput.ts: a bare Fastify 5 route in its own process that does what
 * a stored emit needs and nothing else. It validates the body with the platform's schema (`EmitBody`) and its
 * event-type and size rules, builds the same event row (metadata with correlation and request ids, user
 * agent, address) and one outbox row per subscription (`--subscriptions`, default 0, as in the platform case),
 * and writes them with the platform's schema (every migration: indexes and rollup triggers), driver and sync
 * setting, a batch at a time: emits that arrive while a batch commits go together in the next (group commit),
 * numbered from the `event_sequence` row as the platform's writer numbers them. It answers 201 after the commit.
 *
 * - `sqlite`: better-sqlite3, WAL, `synchronous = FULL`; one writer, a batch is one transaction.
 * - `postgres`: `pg`, two batches on their way at once (as the platform's writer), a batch is one statement.
 *
 * No authentication, rate limit, logging, stream hub or dispatcher. Prints {url} when ready; stops on SIGTERM.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { EmitBody } from '../src/events/event-schemas.js';
import { INSERT_COLUMNS } from '../src/events/event-tables.js';
import { newId, nowIso } from '../src/kernel/new-id.js';
import { insertSql, migratedPostgres, migratedSqlite, subscriptionRow } from './bench-database.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { subscriptions: { type: 'string', default: '0' } },
});
const mode = positionals[0] === 'postgres' ? 'postgres' : 'sqlite';
const subscriptionIds = Array.from({ length: Number(values.subscriptions) }, (_, i) => `sub_bench_${i}`);
const MAX_BATCH = 256;
// The platform's default `events.max_payload_bytes`.
const MAX_DATA_BYTES = 262_144;
const EVENT_TYPE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,9}$/;

type Row = Record<string, string | number | null>;
interface Pending {
  event: Row;
  started: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const EVENT_COLUMNS = INSERT_COLUMNS.events;
const OUTBOX_COLUMNS = INSERT_COLUMNS.event_outbox;

/** The outbox rows of a batch; `sequence` is the event's place in the batch until the base is known. */
const outboxRows = (batch: Pending[]): Row[] =>
  batch.flatMap((p, i) =>
    subscriptionIds.map((subscriptionId) => ({
      id: newId('dlv'),
      event_id: p.event['event_id']!,
      subscription_id: subscriptionId,
      sequence: i + 1,
      priority: p.event['priority']!,
      status: 'pending',
      attempts: 0,
      next_attempt_at: batch[0]!.event['timestamp']!,
      created_at: batch[0]!.event['timestamp']!,
      updated_at: batch[0]!.event['timestamp']!,
    })),
  );

const TAKE =
  'update "event_sequence" set "last" = %max%("last", (select coalesce(max("sequence"), 0) from "events")) + %n% ' +
  'where "id" = 1 returning "last"';

/** Writes a batch; resolves once it is committed. */
type WriteBatch = (batch: Pending[]) => Promise<void>;

async function sqliteWriter(): Promise<{ write: WriteBatch; lanes: number; stop: () => void }> {
  const { db, remove } = await migratedSqlite('FULL');
  const insertSubscription = db.prepare(
    insertSql('subscriptions', Object.keys(subscriptionRow('', '')), 'sqlite'),
  );
  for (const id of subscriptionIds)
    insertSubscription.run(...Object.values(subscriptionRow(id, 'http://127.0.0.1:9/')));
  const take = db.prepare(TAKE.replace('%max%', 'max').replace('%n%', '?')).pluck();
  const insertEvent = db.prepare(insertSql('events', EVENT_COLUMNS, 'sqlite'));
  const insertOutbox = db.prepare(insertSql('event_outbox', OUTBOX_COLUMNS, 'sqlite'));
  const commit = db.transaction((batch: Pending[]) => {
    const base = Number(take.get(batch.length)) - batch.length;
    for (const [i, p] of batch.entries()) {
      p.event['sequence'] = base + i + 1;
      insertEvent.run(...EVENT_COLUMNS.map((c) => p.event[c]));
    }
    for (const o of outboxRows(batch)) {
      o['sequence'] = base + Number(o['sequence']);
      insertOutbox.run(...OUTBOX_COLUMNS.map((c) => o[c]));
    }
  });
  return { write: async (batch) => commit(batch), lanes: 1, stop: remove };
}

async function postgresWriter(): Promise<{ write: WriteBatch; lanes: number; stop: () => Promise<void> }> {
  const { pool, drop } = await migratedPostgres(`platform_bench_bare_${process.pid}`, 2);
  for (const id of subscriptionIds) {
    const row = subscriptionRow(id, 'http://127.0.0.1:9/');
    await pool.query(insertSql('subscriptions', Object.keys(row), 'postgres'), Object.values(row));
  }
  const events = EVENT_COLUMNS.filter((c) => c !== 'sequence');
  const quoted = (cols: readonly string[]) => cols.map((c) => `"${c}"`).join(', ');
  const from = (alias: string, cols: readonly string[]) =>
    cols
      .map((c) => (c === 'sequence' ? `"taken"."base" + "${alias}"."sequence"` : `"${alias}"."${c}"`))
      .join(', ');
  // One statement: the numbers, the events and their outbox rows (each set a JSON array of row objects).
  const text =
    `with "taken" as (${TAKE.replace('%max%', 'greatest').replace('%n%', '$1::bigint').replace('returning "last"', 'returning "last" - $1::bigint as "base"')}), ` +
    `"stored" as (insert into "events" (${quoted(events)}, "sequence") select ${from('u', events)}, ` +
    `"taken"."base" + "u"."sequence" from "taken", json_populate_recordset(null::"events", $2::json) as "u"), ` +
    `"queued" as (insert into "event_outbox" (${quoted(OUTBOX_COLUMNS)}) select ${from('o', OUTBOX_COLUMNS)} ` +
    `from "taken", json_populate_recordset(null::"event_outbox", $3::json) as "o") select "base" from "taken"`;
  return {
    write: async (batch) => {
      for (const [i, p] of batch.entries()) p.event['sequence'] = i + 1;
      const values = [
        batch.length,
        JSON.stringify(batch.map((p) => p.event)),
        JSON.stringify(outboxRows(batch)),
      ];
      await pool.query({ name: 'bare-emit', text, values });
    },
    lanes: 2,
    stop: drop,
  };
}

const writer = mode === 'postgres' ? await postgresWriter() : await sqliteWriter();
const queue: Pending[] = [];
let lanes = 0;

/** A lane takes the next batch, writes it, answers its emits, and again, while emits wait. */
async function drain(): Promise<void> {
  while (queue.length > 0) {
    const batch = queue.splice(0, MAX_BATCH);
    const now = performance.now();
    for (const p of batch) p.event['processing_time_ms'] = Math.round((now - p.started) * 1000) / 1000;
    try {
      await writer.write(batch);
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}

/** Starts a lane if one is free; a lane that ends looks again, so no emit is left waiting. */
function startLane(): void {
  if (lanes >= writer.lanes || queue.length === 0) return;
  lanes += 1;
  // On the next turn, so that the emits parsed in this one join the batch.
  setImmediate(() => {
    void drain().finally(() => {
      lanes -= 1;
      startLane();
    });
  });
}

function write(event: Row, started: number): Promise<void> {
  return new Promise((resolve, reject) => {
    queue.push({ event, started, resolve, reject });
    startLane();
  });
}

interface Emit {
  event_type?: string;
  type?: string;
  source?: string;
  data?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  priority?: number;
  security_level?: string;
}

// The platform's validator options: Fastify's defaults without type coercion.
const app = Fastify({ logger: false, ajv: { customOptions: { coerceTypes: false } } });
app.post('/api/v1/events', { schema: { body: EmitBody } }, async (request, reply) => {
  const started = performance.now();
  const input = request.body as Emit;
  const eventType = input.event_type ?? input.type ?? '';
  const dataText = JSON.stringify(input.data ?? {});
  if (!EVENT_TYPE.test(eventType) || Buffer.byteLength(dataText) > MAX_DATA_BYTES) {
    return reply.code(400).send({ success: false, error: { code: 'VALIDATION_ERROR' } });
  }
  const metadata = {
    ...input.metadata,
    correlation_id: request.id,
    request_id: request.id,
    user_agent: request.headers['user-agent'] ?? null,
    ip_address: request.ip,
  };
  const source = input.source ?? 'api';
  const event: Row = {
    event_id: newId('evt'),
    sequence: 0,
    event_type: eventType,
    source,
    timestamp: nowIso(),
    priority: input.priority ?? 5,
    status: subscriptionIds.length === 0 ? 'processed' : 'emitted',
    security_level: input.security_level ?? 'internal',
    data: dataText,
    data_encrypted: 0,
    metadata: JSON.stringify(metadata),
    correlation_id: request.id,
    emitter_id: null,
    expires_at: null,
    subscriber_count: subscriptionIds.length,
    processing_time_ms: 0,
    emitted_by: source,
    durable_subscribers: subscriptionIds.length,
    traceparent: null,
    tracestate: null,
  };
  await write(event, started);
  const { event_id, event_type, timestamp, priority, sequence, subscriber_count } = event;
  return reply.code(201).send({
    success: true,
    data: {
      event: {
        event_id,
        event_type,
        source,
        timestamp,
        priority,
        status: 'emitted',
        sequence,
        subscriber_count,
      },
    },
  });
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.on('SIGTERM', () => {
  app
    .close()
    .then(() => writer.stop())
    .then(
      () => process.exit(0),
      () => process.exit(1),
    );
});
