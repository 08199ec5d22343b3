/**
 * `npm run bench:scale`: what requests cost once the store is large. Starts the platform (built `dist/` when
 * current, else the sources through tsx: the label says which) on each backend, loads N events through
 * POST /api/v1/events (the real write path: 64 keep-alive connections, 100 types, 10 sources), restarts it,
 * then measures every read whose cost could grow with the store, cold (the first call after the restart) and
 * warm (p50/p99 over repeated calls, one event emitted before each so that no cached answer is reused),
 * while a separate connection polls GET /api/v1/health every 10 ms: the longest health answer during an
 * operation is how long the server stalled. Then a backup (until its record is completed) and a purge of one
 * type in a hundred. Peak RSS of the server is read from /proc throughout. Prints one markdown table.
 *
 *   npm run bench:scale                                   # 1,000,000 events, SQLite then PostgreSQL
 *   npm run bench:scale -- --events 20000 --backend sqlite  # the smoke run
 *   npm run bench:scale -- --events 200000 --repeat 20
 *   npm run bench:scale -- --events 200000 --backend sqlite --memory 5 --load-only
 *
 * `--memory <s>` prints where the server's memory is every s seconds while it loads (bench/memory-breakdown.ts,
 * with the V8 heap of its main thread from GET /api/v1/admin/system/health); `--load-only` stops after the load.
 *
 *   npm run bench:scale -- --events 10000000 --backend sqlite --loader direct
 *
 * `--spread-days 7` (with `--loader direct`) dates the events evenly over the 7 days before the load, as a store
 * that grew at a steady rate would hold them, instead of the minutes the load takes.
 *
 * `--loader direct` writes the events with the server stopped, through the platform's own EventWriter in a
 * child process (bench/direct-loader.ts: the same rows, roll-ups and sequence numbers as the emits), then
 * starts the server on that database: 10M events in minutes instead of ~50 min at ~3,500 emits/s.
 * On PostgreSQL the store is vacuumed and analysed after the load, as autovacuum would soon do.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Client, Pool } from 'undici';
import { spawnJsonChild } from './json-child.js';
import { memoryBreakdown } from './memory-breakdown.js';
import {
  adminToken,
  type PlatformProcess,
  platformRuntime,
  startPlatformProcess,
} from './platform-process.js';
import { residentBytes } from './process-memory.js';
import { benchEventBody } from './scale-events.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    backend: { type: 'string', default: 'sqlite,postgres' },
    // Warm calls per read (p50/p99 over them).
    repeat: { type: 'string', default: '20' },
    connections: { type: 'string', default: '64' },
    memory: { type: 'string', default: '0' },
    'load-only': { type: 'boolean', default: false },
    // `api` (POST /api/v1/events) or `direct` (the EventWriter with the server stopped: bench/direct-loader.ts).
    loader: { type: 'string', default: 'api' },
    // With `--loader direct`: the events' timestamps spread over this many days before now (a store that grew
    // at a steady rate), instead of the minutes the load takes.
    'spread-days': { type: 'string' },
  },
});
const MEMORY_EVERY_S = Number(values.memory);
const EVENTS = Number(values.events);
const REPEAT = Math.max(2, Number(values.repeat));
const CONNECTIONS = Number(values.connections);
const BACKENDS = values.backend.split(',').map((b) => b.trim());
const LOADER = values.loader;
if (LOADER !== 'api' && LOADER !== 'direct') throw new Error(`unknown loader ${LOADER}: api or direct`);
const PG_ADMIN = process.env.PLATFORM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Row {
  backend: string;
  operation: string;
  cold: number | undefined;
  p50: number | undefined;
  p99: number | undefined;
  stall: number;
  /** The server's largest VmRSS seen while the operation ran, MB. */
  rss: number;
  note?: string;
}

class Bench {
  readonly rows: Row[] = [];
  private peakRss = 0;
  /** The largest VmRSS since the operation under way began (peakDuring). */
  private operationPeak = 0;
  private rssTimer: NodeJS.Timeout | undefined;
  private api!: Pool;
  private token = '';
  private renewing: Promise<string> | undefined;

  constructor(
    private readonly backend: string,
    private server: PlatformProcess,
    private readonly env: Record<string, string>,
  ) {}

  get dataDir() {
    return this.server.dataDir;
  }

  get peakRssMb() {
    return this.peakRss / 1_048_576;
  }

  async connect(): Promise<void> {
    this.api = new Pool(this.server.url, { connections: CONNECTIONS, pipelining: 1 });
    this.token = await adminToken(this.server.url);
    this.sampleRss();
    this.rssTimer ??= setInterval(() => this.sampleRss(), 100);
  }

  private sampleRss() {
    try {
      const now = residentBytes(this.server.pid);
      this.peakRss = Math.max(this.peakRss, now);
      this.operationPeak = Math.max(this.operationPeak, now);
    } catch {
      // Between a stop and the next start.
    }
  }

  async request(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const used = this.token;
    const answer = await this.requestOnce(used, method, path, body);
    if (answer.status !== 401) return answer;
    // The access token expired (15 minutes by default: a slow load outlasts it): one new token for all the
    // connections that found out, then once more.
    if (this.token === used) {
      this.renewing ??= adminToken(this.server.url).finally(() => {
        this.renewing = undefined;
      });
      const fresh = await this.renewing;
      if (this.token === used) this.token = fresh;
    }
    return this.requestOnce(this.token, method, path, body);
  }

  private async requestOnce(token: string, method: string, path: string, body?: unknown) {
    const res = await this.api.request({
      method: method as 'GET',
      path,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.statusCode, json };
  }

  /** One line of where the server's memory is (`--memory`): /proc, and its main thread's V8 heap. */
  async logMemory(label: string): Promise<void> {
    const proc = memoryBreakdown(this.server.pid);
    const res = await this.request('GET', '/api/v1/admin/system/health');
    const memory = (res.json?.data?.components ?? res.json?.components ?? []).find(
      (c: { name: string }) => c.name === 'memory',
    )?.details;
    const v8 = memory
      ? {
          heap_used_mb: memory.heap_used_mb,
          heap_total_mb: memory.heap_total_mb,
          external_mb: memory.external_mb,
        }
      : {};
    log(`  memory ${label}: ${JSON.stringify({ ...proc, ...v8 })}`);
  }

  /** Emits `count` events through POST /api/v1/events, CONNECTIONS at a time; resolves to events/s. */
  async load(count: number): Promise<number> {
    const started = performance.now();
    let next = 0;
    const memoryTimer =
      MEMORY_EVERY_S > 0
        ? setInterval(() => {
            this.logMemory(`at ${next} events`).catch((err) => log(`  memory: ${err}`));
          }, MEMORY_EVERY_S * 1000)
        : undefined;
    let lastReport = started;
    const worker = async () => {
      while (next < count) {
        const i = next++;
        const res = await this.request('POST', '/api/v1/events', benchEventBody(i));
        if (res.status !== 201) throw new Error(`emit answered ${res.status}: ${JSON.stringify(res.json)}`);
        if (performance.now() - lastReport > 10_000) {
          lastReport = performance.now();
          log(`  ${next} events loaded (${Math.round(next / ((lastReport - started) / 1000))}/s)`);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: CONNECTIONS }, worker));
    } finally {
      clearInterval(memoryTimer);
    }
    return count / ((performance.now() - started) / 1000);
  }

  /** Stops the server, runs `between` (on its stopped database), starts it on the same data. */
  async restart(between: () => Promise<void> = async () => {}): Promise<void> {
    await this.api.close();
    await this.server.stop({ keepData: true });
    await between();
    this.server = await startPlatformProcess({
      runtime: platformRuntime(),
      dataDir: this.server.dataDir,
      env: this.env,
    });
    await this.connect();
  }

  /**
   * Runs `work` while another connection polls GET /api/v1/health every 10 ms; resolves to the work's result
   * and the longest health answer seen (a 10 ms poll may miss a shorter stall, never a longer one). `work`
   * may mark the stretches that count (`measured`): then only health answers overlapping them count, so that
   * the emits made between warm calls (whose commits are synced to disk on the server's thread) are not
   * taken for the read's stall.
   */
  async withStallProbe<T>(
    work: (measured: <R>(part: () => Promise<R>) => Promise<R>) => Promise<T>,
  ): Promise<{ result: T; stall: number }> {
    const probe = new Client(this.server.url);
    let stop = false;
    const answers: [number, number][] = [];
    const windows: [number, number][] = [];
    const polling = (async () => {
      // At least one answer, also when the work ends first.
      do {
        const started = performance.now();
        const res = await probe.request({ method: 'GET', path: '/api/v1/health' });
        await res.body.dump();
        answers.push([started, performance.now()]);
        await new Promise((r) => setTimeout(r, 10));
      } while (!stop);
    })();
    const measured = async <R>(part: () => Promise<R>): Promise<R> => {
      const started = performance.now();
      try {
        return await part();
      } finally {
        windows.push([started, performance.now()]);
      }
    };
    try {
      const result = await work(measured);
      stop = true;
      await polling;
      const counted =
        windows.length === 0
          ? answers
          : answers.filter(([s, e]) => windows.some(([ws, we]) => s < we && e > ws));
      return { result, stall: Math.max(0, ...counted.map(([s, e]) => e - s)) };
    } finally {
      stop = true;
      await polling.catch(() => {});
      await probe.close();
    }
  }

  /** Runs an operation and answers with it the server's peak VmRSS meanwhile (MB), sampled every 100 ms. */
  private async peakDuring<T>(operation: () => Promise<T>): Promise<T & { rss: number }> {
    this.operationPeak = 0;
    this.sampleRss();
    const result = await operation();
    this.sampleRss();
    return Object.assign(result as object, { rss: this.operationPeak / 1_048_576 }) as T & { rss: number };
  }

  /** One read: cold (its first call), then REPEAT warm calls with an emit before each. */
  async read(operation: string, path: string, note?: string): Promise<void> {
    const timed = async () => {
      const started = performance.now();
      const res = await this.request('GET', path);
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(res.json)}`);
      return performance.now() - started;
    };
    const { result, stall, rss } = await this.peakDuring(() =>
      this.withStallProbe(async (measured) => {
        const cold = await measured(timed);
        const warm: number[] = [];
        for (let i = 0; i < REPEAT; i++) {
          await this.request('POST', '/api/v1/events', {
            event_type: 'bench.tick',
            source: 'bench',
            data: {},
          });
          warm.push(await measured(timed));
        }
        return { cold, warm };
      }),
    );
    const sorted = result.warm.sort((a, b) => a - b);
    this.rows.push({
      backend: this.backend,
      operation,
      cold: result.cold,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      stall,
      rss,
      ...(note ? { note } : {}),
    });
    log(
      `  ${operation}: cold ${fmt(result.cold)} ms, p50 ${fmt(percentile(sorted, 0.5))} ms, stall ${fmt(stall)} ms`,
    );
  }

  /** Polls `path` until `done` says so (or 10 minutes pass). */
  async until(path: string, done: (json: any) => boolean): Promise<any> {
    const deadline = performance.now() + 600_000;
    while (performance.now() < deadline) {
      const res = await this.request('GET', path);
      if (done(res.json)) return res.json;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${path} did not finish within 10 minutes`);
  }

  async backup(): Promise<void> {
    const { result, stall, rss } = await this.peakDuring(() =>
      this.withStallProbe(async () => {
        const started = performance.now();
        const res = await this.request('POST', '/api/v1/admin/backup', { name: 'bench-scale' });
        if (res.status !== 201) throw new Error(`backup answered ${res.status}: ${JSON.stringify(res.json)}`);
        const answered = performance.now() - started;
        const id = res.json.data.backup.id as string;
        const listed = await this.until('/api/v1/admin/backup', (json) => {
          const record = (json?.data?.backups ?? []).find((b: { id: string }) => b.id === id);
          return record?.status === 'completed' || record?.status === 'failed';
        });
        const record = listed.data.backups.find((b: { id: string }) => b.id === id);
        return { answered, total: performance.now() - started, record };
      }),
    );
    this.rows.push({
      backend: this.backend,
      operation: 'POST /admin/backup until completed',
      cold: result.total,
      p50: undefined,
      p99: undefined,
      stall,
      rss,
      note: `answered after ${fmt(result.answered)} ms; ${result.record.status}, ${result.record.size_mb} MB`,
    });
    log(`  backup: ${fmt(result.total)} ms (${result.record.status}), stall ${fmt(stall)} ms`);
  }

  async purge(): Promise<void> {
    const { result, stall, rss } = await this.peakDuring(() =>
      this.withStallProbe(async () => {
        const started = performance.now();
        const res = await this.request('POST', '/api/v1/events/purge', {
          criteria: { older_than_days: 0, event_types: ['shop9.ship'] },
          batch_size: 1000,
        });
        if (res.status >= 300) throw new Error(`purge answered ${res.status}: ${JSON.stringify(res.json)}`);
        const id = res.json.data.purge_id as string;
        const final = await this.until(`/api/v1/events/purge/${id}`, (json) =>
          ['completed', 'failed', 'cancelled'].includes(json?.data?.purge?.status),
        );
        return { total: performance.now() - started, purge: final.data.purge };
      }),
    );
    const deleted = Number(result.purge.events_purged ?? 0);
    this.rows.push({
      backend: this.backend,
      operation: 'purge of one type in 100 (shop9.ship)',
      cold: result.total,
      p50: undefined,
      p99: undefined,
      stall,
      rss,
      note: `${result.purge.status}, ${deleted} events, ${fmt(deleted / (result.total / 1000))} events/s`,
    });
    log(`  purge: ${fmt(result.total)} ms, ${deleted} events, stall ${fmt(stall)} ms`);
  }

  async close(): Promise<void> {
    clearInterval(this.rssTimer);
    await this.api.close();
    await this.server.stop();
  }
}

function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

const fmt = (n: number | undefined) =>
  n === undefined ? '–' : n >= 100 ? String(Math.round(n)) : n.toFixed(n >= 10 ? 1 : 2);

async function runBackend(backend: string): Promise<{ rows: Row[]; extra: string[] }> {
  const env: Record<string, string> = {};
  let dropDatabase: (() => Promise<void>) | undefined;
  if (backend === 'postgres') {
    const name = `platform_bench_scale_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(PG_ADMIN);
    url.pathname = `/${name}`;
    env['PLATFORM__DATABASE__URL'] = url.toString();
    dropDatabase = async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    };
  } else if (backend !== 'sqlite') {
    throw new Error(`unknown backend ${backend}: sqlite or postgres`);
  }
  const runtime = platformRuntime();
  log(`${backend}: starting the platform (${runtime.label})`);
  const bench = new Bench(backend, await startPlatformProcess({ runtime, env }), env);
  const extra: string[] = [];
  try {
    await bench.connect();
    const idle = bench.peakRssMb;
    if (MEMORY_EVERY_S > 0) await bench.logMemory('after start');
    const loadStarted = performance.now();
    if (LOADER === 'direct') {
      log(`${backend}: writing ${EVENTS} events through the EventWriter, server stopped`);
      let rate = 0;
      await bench.restart(async () => {
        const target = env['PLATFORM__DATABASE__URL'] ?? `${bench.dataDir}/platform.db`;
        const spread = values['spread-days'] === undefined ? [] : [values['spread-days']];
        const loader = await spawnJsonChild<{ rate: number }>('direct-loader.ts', [
          target,
          String(EVENTS),
          ...spread,
        ]);
        if ((await loader.exited) !== 0) throw new Error('the direct loader failed');
        rate = loader.first.rate;
      });
      extra.push(
        `${backend}: ${EVENTS} events written by the direct loader (EventWriter, server stopped) in ` +
          `${fmt((performance.now() - loadStarted) / 1000)} s with the restart (${fmt(rate)} events/s)`,
      );
    } else {
      log(`${backend}: loading ${EVENTS} events through POST /api/v1/events`);
      const rate = await bench.load(EVENTS);
      extra.push(
        `${backend}: ${EVENTS} events loaded in ${fmt((performance.now() - loadStarted) / 1000)} s (${fmt(rate)} events/s); ` +
          `RSS after start ${fmt(idle)} MB, peak while loading ${fmt(bench.peakRssMb)} MB`,
      );
      if (MEMORY_EVERY_S > 0) await bench.logMemory('after the load');
      if (values['load-only']) return { rows: bench.rows, extra };
      await bench.restart();
    }
    if (backend === 'postgres') {
      // What autovacuum does to a store written for a while (it starts a minute after a large insert at the
      // soonest, and the measurements would start before it): the visibility map, without which an index-only
      // scan visits the table for every entry, and the planner's statistics of the loaded tables.
      const vacuumStarted = performance.now();
      const c = new pg.Client({ connectionString: env['PLATFORM__DATABASE__URL'] });
      await c.connect();
      await c.query('vacuum (analyze)');
      await c.end();
      extra.push(
        `${backend}: VACUUM (ANALYZE) after the load, as autovacuum would, ${fmt((performance.now() - vacuumStarted) / 1000)} s`,
      );
    }
    log(`${backend}: measuring (cold = first call after a restart)`);
    const deep = Math.max(1, Math.floor(EVENTS / 2 / 100));
    const some = await bench.request('GET', '/api/v1/events?per_page=1&event_type=shop3.payment');
    const eventId = some.json.data.events[0].event_id as string;
    await bench.read('GET /events?per_page=20', '/api/v1/events?per_page=20');
    await bench.read(
      'GET /events?event_type=shop5.**&per_page=20',
      '/api/v1/events?event_type=shop5.**&per_page=20',
    );
    await bench.read(
      'GET /events?source=service-3&per_page=20',
      '/api/v1/events?source=service-3&per_page=20',
    );
    await bench.read('GET /events?priority=7&status=processed', '/api/v1/events?priority=7&status=processed');
    await bench.read(
      `GET /events?per_page=100&page=${deep} (deep)`,
      `/api/v1/events?per_page=100&page=${deep}`,
    );
    await bench.read(
      `GET /events?event_type=shop5.**&per_page=100&page=${Math.max(1, Math.floor(deep / 10))} (deep)`,
      `/api/v1/events?event_type=shop5.**&per_page=100&page=${Math.max(1, Math.floor(deep / 10))}`,
    );
    await bench.read('GET /events/{id}/audit', `/api/v1/events/${eventId}/audit`);
    for (const group of ['event_type', 'source', 'hour', 'day']) {
      await bench.read(`GET /events/stats?group_by=${group}`, `/api/v1/events/stats?group_by=${group}`);
    }
    await bench.read('GET /events/health', '/api/v1/events/health');
    await bench.read('GET /metrics', '/api/v1/metrics');
    await bench.read('GET /admin/analytics/users', '/api/v1/admin/analytics/users');
    await bench.read('GET /admin/system/logs', '/api/v1/admin/system/logs');
    await bench.backup();
    await bench.purge();
    extra.push(`${backend}: server peak RSS over the whole run ${fmt(bench.peakRssMb)} MB`);
    return { rows: bench.rows, extra };
  } finally {
    await bench.close().catch(() => {});
    await dropDatabase?.().catch(() => {});
  }
}

const started = performance.now();
const rows: Row[] = [];
const notes: string[] = [];
for (const backend of BACKENDS) {
  const result = await runBackend(backend);
  rows.push(...result.rows);
  notes.push(...result.extra);
}
const lines = [
  `${EVENTS} events; warm p50/p99 over ${REPEAT} calls, each after one emit; stall = longest GET /api/v1/health answer overlapping the operation's calls (polled every 10 ms)`,
  '',
  '| backend | operation | cold ms | p50 ms | p99 ms | health stall ms | server RSS peak MB | note |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |',
  ...rows.map(
    (r) =>
      `| ${r.backend} | ${r.operation} | ${fmt(r.cold)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.stall)} | ${fmt(r.rss)} | ${r.note ?? ''} |`,
  ),
  '',
  ...notes.map((n) => `- ${n}`),
  `- whole run: ${fmt((performance.now() - started) / 1000)} s`,
];
process.stdout.write(`${lines.join('\n')}\n`);
