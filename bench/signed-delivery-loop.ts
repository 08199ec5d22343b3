/**
 * The delivery limit of bench/webhook-throughput.ts: a bare undici loop that does what a delivery needs and
 * nothing else, in the process that runs it. Each delivery's body is built at send time (`eventJson`, the
 * platform's body) and signed with both schemes (`signatureHeaders`: the hex HMAC of the body and the Standard
 * Webhooks HMAC of id, timestamp and body, with a timestamp taken then); its outcome is recorded in batches as
 * the platform's recorder does (results gathered 10 ms or 128 at a time, at most 1,000 per transaction): an
 * attempt row and the outbox row's new status, in SQLite with the platform's schema, in WAL mode at
 * `synchronous = NORMAL` (the platform commits its delivery results so: Database.unsyncedTransaction).
 *
 * No claim, lease, retry schedule, subscription counters or event status: only what every delivery needs.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { INSERT_COLUMNS } from '../src/events/event-tables.js';
import { newId, nowIso } from '../src/kernel/new-id.js';
import { type DeliverableEvent, eventJson } from '../src/webhooks/webhook-payload.js';
import { signatureHeaders } from '../src/webhooks/webhook-signature.js';
import { insertSql, migratedSqlite, subscriptionRow } from './bench-database.js';
import { cpuSeconds } from './process-cpu.js';

const GATHER_MS = 10;
const GATHER_ROWS = 128;
const MAX_BATCH = 1000;
const OWNER = 'bare-loop';

interface Outcome {
  delivery: { id: string; event_id: string };
  status: number;
  latencyMs: number;
  at: string;
}

export interface SignedLoopResult {
  /** Deliveries sent and recorded. */
  sent: number;
  seconds: number;
  /** This process's CPU time per delivery (from /proc), µs. */
  cpu_us: number;
}

export async function signedDeliveryLoop(options: {
  /** The receiver's URL of one subscription (`http://host:port/hook/0`). */
  target: string;
  secret: string;
  /** The headers of a platform delivery other than its ids and signatures (content type, user agent). */
  headers: Record<string, string>;
  /** `data` of every event, as JSON text. */
  dataJson: string;
  concurrency: number;
  total: number;
  /** Stops sending after this long. */
  maxMs: number;
}): Promise<SignedLoopResult> {
  const { db, remove } = await migratedSqlite('NORMAL');
  try {
    const subscription = subscriptionRow('sub_bench_limit', options.target);
    db.prepare(insertSql('subscriptions', Object.keys(subscription), 'sqlite')).run(
      ...Object.values(subscription),
    );
    const events = prepareDeliveries(db, options.total, options.dataJson);
    const insertAttempt = db.prepare(
      insertSql('delivery_attempts', INSERT_COLUMNS.delivery_attempts, 'sqlite'),
    );
    const settle = db.prepare(
      'update "event_outbox" set "status" = \'delivered\', "attempts" = 1, "lease_owner" = null, ' +
        '"lease_until" = null, "last_error" = null, "updated_at" = ? ' +
        'where "id" in (select "value" from json_each(?)) and "lease_owner" = ?',
    );
    const commit = db.transaction((batch: Outcome[]) => {
      for (const o of batch) {
        const attempt: Record<string, string | number | null> = {
          id: newId('att'),
          outbox_id: o.delivery.id,
          event_id: o.delivery.event_id,
          subscription_id: subscription['id'] as string,
          attempt: 1,
          status: o.status >= 200 && o.status < 300 ? 'delivered' : 'failed',
          response_status: o.status,
          latency_ms: o.latencyMs,
          error: null,
          created_at: o.at,
          batch_id: null,
          actor: 'webhook_dispatcher',
          next_attempt_at: null,
          replay_id: null,
        };
        insertAttempt.run(...INSERT_COLUMNS.delivery_attempts.map((c) => attempt[c]));
      }
      settle.run(nowIso(), JSON.stringify(batch.map((o) => o.delivery.id)), OWNER);
    });
    const outcomes: Outcome[] = [];
    let writing: Promise<void> | undefined;
    const drain = async () => {
      while (outcomes.length > 0) {
        if (outcomes.length < GATHER_ROWS) await sleep(GATHER_MS);
        commit(outcomes.splice(0, MAX_BATCH));
      }
    };
    const startWriting = () => {
      writing ??= drain().finally(() => {
        writing = undefined;
        // An outcome added after the last batch was taken is not left behind.
        if (outcomes.length > 0) startWriting();
      });
    };
    const record = (o: Outcome) => {
      outcomes.push(o);
      startWriting();
    };

    const url = new URL(options.target);
    const pool = new Pool(url.origin, { connections: options.concurrency });
    const cpuBefore = cpuSeconds(process.pid);
    const started = performance.now();
    const stopAt = started + options.maxMs;
    let next = 0;
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (next < events.length && performance.now() < stopAt) {
          const { delivery, event } = events[next++]!;
          const at = nowIso();
          const body = eventJson(event, subscription['id'] as string, 1);
          const headers = {
            ...options.headers,
            'x-platform-delivery-id': delivery.id,
            'x-platform-event-id': event.event_id,
            'x-platform-event-type': event.event_type,
            ...signatureHeaders(options.secret, delivery.id, Math.floor(Date.now() / 1000), body),
          };
          const sentAt = performance.now();
          const res = await pool.request({ path: url.pathname, method: 'POST', headers, body });
          await res.body.dump();
          record({ delivery, status: res.statusCode, latencyMs: performance.now() - sentAt, at });
        }
      }),
    );
    while (writing !== undefined) await writing;
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(process.pid) - cpuBefore;
    await pool.close();
    const recorded = Number(
      db.prepare('select count(*) from "delivery_attempts"').pluck().get() as number | bigint,
    );
    return { sent: recorded, seconds, cpu_us: Math.round((cpu * 1e6) / Math.max(1, recorded)) };
  } finally {
    remove();
  }
}

/** `total` stored events with one outbox row each, leased to the loop (untimed). */
function prepareDeliveries(
  db: Awaited<ReturnType<typeof migratedSqlite>>['db'],
  total: number,
  dataJson: string,
): Array<{ delivery: { id: string; event_id: string }; event: DeliverableEvent }> {
  const insertEvent = db.prepare(insertSql('events', INSERT_COLUMNS.events, 'sqlite'));
  const insertOutbox = db.prepare(insertSql('event_outbox', INSERT_COLUMNS.event_outbox, 'sqlite'));
  const lease = db.prepare(
    `update "event_outbox" set "status" = 'delivering', "lease_owner" = ?, "lease_until" = ?`,
  );
  const at = nowIso();
  const prepared = Array.from({ length: total }, (_, i) => {
    const event: DeliverableEvent = {
      event_id: newId('evt'),
      event_type: 'bench.delivery.created',
      source: 'bench',
      timestamp: at,
      priority: 5,
      sequence: i + 1,
      dataJson,
      correlation_id: `bench-${i}`,
      expires_at: null,
      traceparent: null,
      tracestate: null,
    };
    return { delivery: { id: newId('dlv'), event_id: event.event_id }, event };
  });
  db.transaction(() => {
    for (const { delivery, event } of prepared) {
      const row: Record<string, string | number | null> = {
        ...event,
        status: 'emitted',
        security_level: 'internal',
        data: dataJson,
        data_encrypted: 0,
        metadata: '{}',
        emitter_id: null,
        subscriber_count: 1,
        processing_time_ms: 0,
        emitted_by: 'bench',
        durable_subscribers: 1,
      };
      insertEvent.run(...INSERT_COLUMNS.events.map((c) => row[c] ?? null));
      const outbox: Record<string, string | number> = {
        id: delivery.id,
        event_id: event.event_id,
        subscription_id: 'sub_bench_limit',
        sequence: event.sequence,
        priority: 5,
        status: 'pending',
        attempts: 0,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      };
      insertOutbox.run(...INSERT_COLUMNS.event_outbox.map((c) => outbox[c]));
    }
    lease.run(OWNER, new Date(Date.now() + 3_600_000).toISOString());
  })();
  return prepared;
}
