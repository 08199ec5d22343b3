/**
 * Emit throughput: 64 concurrent keep-alive clients POSTing events for a fixed time, against a bare Fastify
 * route, against the platform on SQLite and on PostgreSQL, and against the durable-emit limit of each database
 * (`limit-sqlite`, `limit-postgres`: bench/bare-emit-server.ts, a bare route writing the same rows the same
 * way), measured in the same run, in turns of 1 s. Each server runs in its own process; the load (autocannon)
 * runs in this one.
 *
 *   npm run bench:events                       # every case, 10 s each
 *   npm run bench:events -- --duration 5 sqlite
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PG_ADMIN } from './bench-database.js';
import { httpLoadInTurns } from './http-load.js';
import { benchNodeArgs } from './platform-process.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    // One JSON line {connections, duration, body_bytes, rows} instead of the table (bench/run-all.ts reads it).
    json: { type: 'boolean', default: false },
  },
});
const duration = Math.min(Number(values.duration), 20);
const connections = Number(values.connections);
const cases =
  positionals.length > 0 ? positionals : ['bare', 'limit-sqlite', 'sqlite', 'limit-postgres', 'postgres'];
/** The display name of a case (bench/event-cases.ts finds the rows by it). */
const caseName = (mode: string) =>
  mode === 'bare'
    ? 'bare fastify route'
    : mode.startsWith('limit-')
      ? `durable-emit limit (${mode.slice('limit-'.length)})`
      : `platform (${mode})`;
const body = JSON.stringify({
  event_type: 'bench.order.created',
  source: 'bench',
  data: { order_id: 12345, customer: 'c-42', total: 99.5, items: [{ sku: 'A1', qty: 2 }] },
  priority: 5,
});

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** The server's CPU time per request, µs. */
  cpu_us: number | null;
}

async function start(mode: string): Promise<{ child: ChildProcess; url: string; token: string }> {
  const script = mode.startsWith('limit-')
    ? ['bench/bare-emit-server.ts', mode.slice('limit-'.length)]
    : ['bench/emit-server.ts', mode];
  const child = spawn(process.execPath, [...benchNodeArgs(), '--import', 'tsx', ...script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    // The ready line; the platform's own log lines (also JSON) go to the same stdout.
    if (line.startsWith('{"url":')) {
      const ready = JSON.parse(line) as { url: string; token?: string };
      return { child, url: ready.url, token: ready.token ?? '' };
    }
  }
  throw new Error(`${mode} server exited before it was ready`);
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
}

async function postgresReachable(): Promise<boolean> {
  const c = new pg.Client({
    connectionString: PG_ADMIN,
    connectionTimeoutMillis: 2000,
  });
  try {
    await c.connect();
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

// Every server is started first; then they are loaded in turns, 1 s each, `duration` rounds
// (bench/http-load.ts), so that a slow spell of a shared host weighs on the platform and the bare route alike.
const servers: Array<{ name: string; child: ChildProcess; url: string; token: string }> = [];
const rows: Row[] = [];
try {
  for (const mode of cases) {
    if (mode.endsWith('postgres') && !(await postgresReachable())) {
      process.stdout.write(`${mode}: not reachable, skipped\n`);
      continue;
    }
    const server = await start(mode);
    servers.push({ name: caseName(mode), ...server });
  }
  const results = await httpLoadInTurns(
    servers.map((server) => ({
      url: `${server.url}/api/v1/events`,
      pid: server.child.pid,
      method: 'POST' as const,
      body,
      headers: {
        'content-type': 'application/json',
        ...(server.token ? { authorization: `Bearer ${server.token}` } : {}),
      },
    })),
    { connections, duration },
  );
  for (const [i, r] of results.entries()) {
    rows.push({
      name: servers[i]!.name,
      rps: r.rps,
      p50: r.p50,
      p99: r.p99,
      non2xx: r.non2xx,
      errors: r.errors,
      cpu_us: r.server_cpu_us,
    });
  }
} finally {
  for (const server of servers) await stop(server.child);
}

const bare = rows.find((r) => r.name === 'bare fastify route');
const table = [
  '| case | requests/s | server CPU µs/request | p50 ms | p99 ms | non-2xx | errors | of bare | of its limit |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => {
    const limit = rows.find((l) => l.name === r.name.replace('platform', 'durable-emit limit'));
    const percent = (of: Row | undefined) => (of ? `${Math.round((r.rps / of.rps) * 100)} %` : '–');
    return `| ${r.name} | ${r.rps} | ${r.cpu_us ?? '–'} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} | ${percent(bare)} | ${r.name.startsWith('platform') ? percent(limit) : '–'} |`;
  }),
];
if (values.json) {
  process.stdout.write(`${JSON.stringify({ connections, duration, body_bytes: body.length, rows })}\n`);
  process.exit(0);
}
process.stdout.write(
  `\n${connections} connections, ${duration} s per case in 1-s turns, body ${body.length} bytes\n\n`,
);
process.stdout.write(`${table.join('\n')}\n`);
