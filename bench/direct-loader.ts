/**
 * The `--loader direct` of bench:scale: writes N events into a platform's database while its server is
 * stopped, through the platform's own EventWriter (the code the emit route's service hands each validated
 * event to: sequence numbers, event rows and outbox rows in one transaction; the roll-ups follow from the
 * triggers on `events`). The rows are the ones POST /api/v1/events would store for the same body emitted by
 * the admin with no subscription (none exists during the load): status `processed`, no outbox rows.
 * Only the request facts in `metadata` differ (request id, user agent `bench-direct-loader`, address
 * 127.0.0.1), and processing_time_ms is the writer's own (from the draft to its write).
 *
 *   node --import tsx bench/direct-loader.ts <sqlite file | postgres url> <count> [spread days]
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { EventWriter } from '../src/events/event-writer.js';
import { newId, nowIso } from '../src/kernel/new-id.js';
import type { Database } from '../src/storage/database.js';
import { createPostgresDatabase } from '../src/storage/postgres/postgres-database.js';
import { createSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { benchEventBody } from './scale-events.js';

/** Emits in flight at once: the writer takes them 256 to a transaction (its group commit). */
const WINDOW = 8192;

export function openBenchDatabase(target: string): Database {
  return /^postgres(ql)?:\/\//.test(target)
    ? createPostgresDatabase(target, 4)
    : createSqliteDatabase(target, { synchronous: 'full' });
}

/** Writes events `from` … `from + count - 1` (the bodies bench:scale emits); resolves to events/s. */
export async function loadDirect(
  database: Database,
  from: number,
  count: number,
  progress: (loaded: number) => void = () => {},
  /**
   * With a number of days: the events' timestamps are spread evenly over that many days before now, in the
   * order written (as if emitted at a steady rate over that time), instead of the time of their write.
   */
  spreadDays?: number,
): Promise<number> {
  const admin = await database.db
    .selectFrom('users')
    .select(['id', 'username'])
    .where('username', '=', 'admin')
    .executeTakeFirstOrThrow();
  const writer = new EventWriter(database.db, database.dialect, async () => {});
  const started = performance.now();
  const spreadMs = (spreadDays ?? 0) * 86_400_000;
  const firstMs = Date.now() - spreadMs;
  const timestamp = (i: number) =>
    spreadMs > 0 ? new Date(firstMs + Math.floor((i * spreadMs) / count)).toISOString() : nowIso();
  for (let done = 0; done < count; ) {
    const n = Math.min(WINDOW, count - done);
    const writes = [];
    for (let k = 0; k < n; k++) {
      const body = benchEventBody(from + done + k);
      const requestId = newId('req');
      writes.push(
        writer.write({
          row: {
            event_type: body.event_type,
            source: body.source,
            priority: body.priority,
            security_level: 'internal',
            emitter_id: admin.id,
            event_id: newId('evt'),
            timestamp: timestamp(done + k),
            status: 'emitted',
            data: JSON.stringify(body.data),
            data_encrypted: 0,
            metadata: JSON.stringify({
              correlation_id: requestId,
              request_id: requestId,
              user_agent: 'bench-direct-loader',
              ip_address: '127.0.0.1',
            }),
            correlation_id: requestId,
            expires_at: null,
            subscriber_count: 0,
            emitted_by: admin.username,
            durable_subscribers: 0,
            // As an emit without a caller's trace: a new trace of its own (54 bytes a row, as stored).
            traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
            tracestate: null,
            idempotency_ref: null,
          },
          subscriptionIds: [],
          startedAt: performance.now(),
        }),
      );
    }
    await Promise.all(writes);
    done += n;
    progress(done);
  }
  await writer.close();
  return count / ((performance.now() - started) / 1000);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [target, count, spread] = process.argv.slice(2);
  if (!target || !count) {
    throw new Error('usage: direct-loader.ts <sqlite file | postgres url> <count> [spread days]');
  }
  const database = openBenchDatabase(target);
  let last = performance.now();
  const rate = await loadDirect(
    database,
    0,
    Number(count),
    (loaded) => {
      if (performance.now() - last < 10_000) return;
      last = performance.now();
      process.stderr.write(`  ${loaded} events written\n`);
    },
    spread === undefined ? undefined : Number(spread),
  );
  await database.close();
  process.stdout.write(`${JSON.stringify({ rate })}\n`);
}
