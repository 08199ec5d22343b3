/**
 * `npm run bench:compaction [-- --keys 1000 --hours 48]`: how long the compaction of the minute roll-ups holds
 * the server's thread on SQLite. Fills `event_rollups` (a new database in a temporary folder, the platform's
 * migrations) with a minute row and an hour row per key for `--hours` old hours (the backlog of the first run
 * after the upgrade, or of a store never compacted), then runs the compaction twice (the first run records the
 * mark, the second deletes below it) and prints the rows deleted, the time taken, the delay of the event loop
 * meanwhile (the longest transaction, as a request waiting on the thread would see it, plus any wait for a CPU
 * on a loaded machine) and this thread's CPU time.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { compactMinuteRollups } from '../src/events/rollup-compaction.js';
import { migrateToLatest } from '../src/storage/migrate.js';
import { createSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';

/** This thread's time on a CPU and waiting for one, in ms (Linux; zeros elsewhere). */
function schedstat(): { cpu: number; wait: number } {
  try {
    const [cpu = 0, wait = 0] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number);
    return { cpu: cpu / 1e6, wait: wait / 1e6 };
  } catch {
    return { cpu: 0, wait: 0 };
  }
}

const { values } = parseArgs({
  options: { keys: { type: 'string', default: '1000' }, hours: { type: 'string', default: '48' } },
});
const keys = Number(values.keys);
const hours = Number(values.hours);
const dir = mkdtempSync(join(tmpdir(), 'bench-compaction-'));
const database = createSqliteDatabase(join(dir, 'platform.db'));
try {
  await migrateToLatest(database.db as never);
  const first = Date.UTC(2026, 0, 1);
  const filled = performance.now();
  // Per hour: 60 minutes × keys minute rows and keys hour rows, one insert per hour.
  for (let h = 0; h < hours; h++) {
    const hour = new Date(first + h * 3_600_000).toISOString().slice(0, 13);
    await sql`with recursive k(i) as (select 0 union all select i + 1 from k where i + 1 < ${keys}),
        m(j) as (select 0 union all select j + 1 from m where j + 1 < 60)
      insert into event_rollups (span, bucket, key_id, event_count, processing_ms)
      select 'm', ${hour} || ':' || substr('0' || j, -2), i + 1, 1, 1.5 from k, m`.execute(database.db);
    await sql`with recursive k(i) as (select 0 union all select i + 1 from k where i + 1 < ${keys})
      insert into event_rollups (span, bucket, key_id, event_count, processing_ms)
      select 'h', ${hour}, i + 1, 60, 90 from k`.execute(database.db);
  }
  const rows = keys * hours * 61;
  console.log(`filled ${rows.toLocaleString('en')} rows in ${Math.round(performance.now() - filled)} ms`);

  const now = first + (hours + 49) * 3_600_000;
  await compactMinuteRollups(database, 48, now);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const started = performance.now();
  const cpuBefore = schedstat();
  const run = await compactMinuteRollups(database, 48, now);
  const took = performance.now() - started;
  delay.disable();
  const cpuAfter = schedstat();
  console.log(
    `deleted ${run.deleted.toLocaleString('en')} minute rows in ${Math.round(took)} ms ` +
      `(${Math.round(run.deleted / (took / 1000)).toLocaleString('en')} rows/s); event loop delay ` +
      `max ${(delay.max / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, ` +
      `mean ${(delay.mean / 1e6).toFixed(1)} ms; this thread on the CPU ${Math.round(cpuAfter.cpu - cpuBefore.cpu)} ms, ` +
      `waiting for a CPU ${Math.round(cpuAfter.wait - cpuBefore.wait)} ms (the machine's other work)`,
  );
} finally {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
}
