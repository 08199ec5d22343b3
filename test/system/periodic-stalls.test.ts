import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stall, startStallProbe } from '../helpers/stall-probe.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, emit, until } from '../webhooks/webhook-fixtures.js';

// What the server does on its own — metrics samples, log store flushes, WAL checkpoints, the dispatcher's
// lease renewals, polls and expiry sweeps, scheduled tasks — must never hold the event loop more than 10 ms at a
// time (issue 26). Each runs here at its shortest interval, while events are emitted and delivered.
const TARGET_MS = 10;
// The probe counts the event loop thread's own CPU within a gap (test/helpers/stall-probe.ts), and CPU time
// itself stretches on a host whose two cores run ten other processes (caches and cores shared); so the
// assertion allows twice the target. A job that holds the loop for 20 ms of CPU does not pass.
const ALLOWED_MS = 2 * TARGET_MS;
const LOAD_MS = 6000;

describe('periodic work on a busy instance', () => {
  let t: TestPlatform;
  let token: string;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    t = await startPlatform(
      {
        // The log store keeps INFO lines (request logs among them): its flush writes them every second.
        logging: { level: 'info' },
        metrics: { sample_interval_seconds: 1 },
        // Lease renewals every 5/3 s, the takeover poll every 100 ms.
        webhooks: { lease_seconds: 5, poll_interval_ms: 100 },
        // The scheduled clean-up task every second.
        tasks: { cleanup_schedule: '* * * * * *' },
      },
      { logStream: { write: () => {} } },
    );
    token = await t.adminToken();
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  it(`holds the event loop at most ${ALLOWED_MS} ms at a time while every periodic job runs`, async () => {
    await createSubscription(t, token, {
      name: 'stall probe',
      event_patterns: ['stall.*'],
      webhook_config: { url: `${receiver.url}/hook` },
    });
    // Warm: the routes' schemas are compiled on first use, and the HTTP pool is made with the first subscription.
    for (let i = 0; i < 20; i++) await emit(t, token, { event_type: 'stall.warm', data: { i } });
    await until(() => receiver.requests.length >= 20, 'the warm-up deliveries');

    const probe = startStallProbe();
    const started = Date.now();
    let emitted = 0;
    while (Date.now() - started < LOAD_MS) {
      // About 100 events a second, each delivered.
      await emit(t, token, { event_type: 'stall.tick', data: { n: emitted } });
      emitted += 1;
      await new Promise((r) => setTimeout(r, 10));
    }
    await until(() => receiver.at('/hook').length >= 20 + emitted, 'every delivery', 20_000);
    const stalls = probe.stop();

    // Every periodic job ran meanwhile.
    const metrics = await service('metrics_collector');
    expect(metrics['samples_written']).toBeGreaterThanOrEqual(3);
    const logs = await service('log_store');
    expect(logs['records_written']).toBeGreaterThan(0);
    const tasks = await t.request('GET', '/api/v1/tasks?type=database_cleanup', { token });
    expect(tasks.statusCode).toBe(200);
    expect(tasks.data.data.pagination.total).toBeGreaterThanOrEqual(3);

    const worst = [...stalls].sort((a, b) => b.heldMs - a.heldMs).slice(0, 5);
    const describe = (s: Stall) =>
      `${s.heldMs.toFixed(1)} ms at ${s.at} ms (gap ${s.gapMs.toFixed(1)}, cpu ${s.cpuMs.toFixed(1)})`;
    console.log(`longest holds over ${emitted} emits: ${worst.map(describe).join('; ')}`);
    expect(worst[0]?.heldMs ?? 0, worst.map(describe).join('\n')).toBeLessThan(ALLOWED_MS);
  }, 60_000);

  const service = (name: string) => serviceMetrics(t, token, name);
});

// On SQLite with synced commits (the default) a commit syncs the WAL inside COMMIT on the server's thread, which
// waits for the disk: 230-280 ms a commit while a backup kept it busy. What the platform writes by itself commits
// unsynced (src/storage/bookkeeping.ts); the database service counts the synced commits of its connection.
describe('periodic writes on SQLite', () => {
  let t: TestPlatform;
  let token: string;

  beforeAll(async () => {
    t = await startPlatform(
      { logging: { level: 'info' }, metrics: { sample_interval_seconds: 1 } },
      { logStream: { write: () => {} } },
    );
    token = await t.adminToken();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("commit none of their writes synced on the server's thread", async () => {
    const service = (name: string) => serviceMetrics(t, token, name);
    const before = await service('database');
    if (t.backend !== 'sqlite') {
      // PostgreSQL's commits never hold the thread: no figure rather than an invented zero.
      expect(before['synced_commits']).toBeUndefined();
      return;
    }
    const written = async () => (await service('metrics_collector'))['samples_written'] ?? 0;
    const logs = async () => (await service('log_store'))['records_written'] ?? 0;
    const logsBefore = await logs();
    // Lines for the log store's flushes (on SQLite they go to logs.db, a connection of their own, at NORMAL).
    for (let i = 0; i < 20; i++) t.platform.context.app.log.info({ component: 'test' }, `periodic line ${i}`);
    // Three metric samples (each one insert), one a second, and the log flushes meanwhile.
    for (let sample = 0; sample < 3; sample++) {
      const samples = await written();
      await until(async () => (await written()) > samples, `metric sample ${sample + 1}`, 5000);
    }
    await until(async () => (await logs()) >= logsBefore + 20, 'the log flush', 5000);
    expect((await service('database'))['synced_commits']).toBe(before['synced_commits']);
  }, 30_000);

  it("start and end a task without a synced commit on the server's thread", async () => {
    if (t.backend !== 'sqlite') return;
    const synced = async () => (await serviceMetrics(t, token, 'database'))['synced_commits'];
    const before = await synced();
    // A task's row is written when it starts and settled when it ends: each committed unsynced, then the WAL
    // synced on libuv's pool before the call goes on (what an answer says is on disk). Its announced events
    // go through the event writer's thread.
    const res = await t.request('POST', '/api/v1/events/purge', {
      token,
      body: { criteria: { older_than_days: 0, event_types: ['nothing.here'] }, dry_run: true },
    });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.data.data.purge_id as string;
    await until(
      async () =>
        (await t.request('GET', `/api/v1/events/purge/${id}`, { token })).data.data.purge.status ===
        'completed',
      'the purge task',
      5000,
    );
    expect(await synced()).toBe(before);
  }, 30_000);
});

async function serviceMetrics(t: TestPlatform, token: string, name: string): Promise<Record<string, number>> {
  const res = await t.request('GET', `/api/v1/services/${name}`, { token });
  expect(res.statusCode, res.body).toBe(200);
  return res.data.data.metrics;
}
