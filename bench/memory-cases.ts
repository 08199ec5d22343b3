/**
 * Start-up time, idle memory and memory per idle WebSocket connection, each next to a bare Fastify process:
 *
 * - start-up: from spawn to the `listening on` line and to the first 200 of the readiness route, on SQLite,
 *   cold (a new data folder: migrations, the admin account) and warm (the same folder again);
 * - idle memory: VmRSS of the warm-started process after it has been idle for a moment;
 * - per connection: N idle WebSocket connections opened by a separate client process; the server's VmRSS
 *   after minus before, divided by N.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { benchEnvironment } from './bench-config.js';
import { spawnJsonChild } from './json-child.js';
import {
  ADMIN_PASSWORD,
  adminToken,
  launchServer,
  type PlatformRuntime,
  startPlatformProcess,
  stopChild,
} from './platform-process.js';
import { openFileLimit, residentBytes } from './process-memory.js';
import { notMeasured, type ResultRow, row } from './result-row.js';

const ROOT = resolve(import.meta.dirname, '..');
const MB = 1024 * 1024;
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The bare start-up baseline: node and Fastify, no loader, no TypeScript. */
const BARE_SERVER = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.get('/ready', async () => ({ ready: true }));
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write('listening on ' + url + '\\n');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
`;

export interface MemoryCaseOptions {
  runtime: PlatformRuntime;
  connections: number;
  log: (line: string) => void;
}

export async function runStartupAndMemoryCases(options: MemoryCaseOptions): Promise<ResultRow[]> {
  const { log } = options;
  log('  bare Fastify process: start-up and idle memory');
  const bare = await launchServer({
    args: ['--input-type=module', '-e', BARE_SERVER],
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '' },
    readyPath: '/ready',
  });
  await settle(1000);
  const bareRss = residentBytes(bare.pid);
  await bare.stop();

  log('  platform: cold start (new data folder)');
  const cold = await startPlatformProcess({ runtime: options.runtime });
  await cold.stop({ keepData: true });
  log('  platform: npm start (same data folder)');
  const viaNpm = await npmStart(cold.dataDir);
  log('  platform: warm start (same data folder)');
  const warm = await startPlatformProcess({ runtime: options.runtime, dataDir: cold.dataDir });
  let idleRss: number;
  let perConnection: ResultRow;
  try {
    await settle(1000);
    idleRss = residentBytes(warm.pid);
    const token = await adminToken(warm.url);
    perConnection = await perConnectionRow(options, {
      platformUrl: `${warm.url.replace(/^http/, 'ws')}/api/v1/events/stream?patterns=bench.idle&token=${token}`,
      platformPid: warm.pid,
    });
  } finally {
    await warm.stop();
  }

  const readyTarget = (ms: number) => ms <= 1000;
  return [
    row({
      id: 'startup.cold_ms',
      figure: 'start-up to ready, SQLite, new data folder',
      value: cold.readyMs,
      unit: 'ms',
      baseline: { label: 'bare Fastify process', value: bare.readyMs },
      target: '≤ 1000 ms',
      check: readyTarget,
      note: `\`listening on\` after ${Math.round(cold.listeningMs)} ms; runs the migrations and creates the admin (argon2)`,
    }),
    row({
      id: 'startup.warm_ms',
      figure: 'start-up to ready, SQLite, existing data folder',
      value: warm.readyMs,
      unit: 'ms',
      baseline: { label: 'bare Fastify process', value: bare.readyMs },
      target: '≤ 1000 ms',
      check: readyTarget,
      note: `\`listening on\` after ${Math.round(warm.listeningMs)} ms (bare ${Math.round(bare.listeningMs)} ms)`,
    }),
    viaNpm === undefined
      ? notMeasured(
          'startup.npm_start_ms',
          'start-up to ready through `npm start`',
          'ms',
          '≤ 1000 ms',
          'run through `npm run bench`, after a build (`npm start` would build first)',
        )
      : row({
          id: 'startup.npm_start_ms',
          figure: 'start-up to ready through `npm start`, nothing changed since the build',
          value: viaNpm.readyMs,
          unit: 'ms',
          baseline: { label: 'bare Fastify process', value: bare.readyMs },
          target: '≤ 1000 ms',
          check: readyTarget,
          note: `\`listening on\` after ${Math.round(viaNpm.listeningMs)} ms: npm itself, then the build check and the server in one process`,
        }),
    row({
      id: 'memory.idle_rss_mb',
      figure: 'idle memory (RSS after start)',
      value: idleRss / MB,
      unit: 'MB',
      baseline: { label: 'bare Fastify process', value: bareRss / MB },
      target: '≤ 120 MB',
      check: (mb) => mb <= 120,
    }),
    perConnection,
  ];
}

async function perConnectionRow(
  options: MemoryCaseOptions,
  platform: { platformUrl: string; platformPid: number },
): Promise<ResultRow> {
  const figure = 'memory per idle WebSocket connection';
  const target = '≤ 20 KB';
  // Each connection takes one descriptor in the server and one in the client process.
  const limit = openFileLimit() ?? Number.POSITIVE_INFINITY;
  const n = Math.min(options.connections, Math.floor(limit - 200));
  if (n < 1000)
    return notMeasured('memory.ws_kb', figure, 'KB', target, `open-file limit ${limit}: raise \`ulimit -n\``);

  const measure = async (label: string, url: string, pid: number) => {
    options.log(`  ${label}: ${n} idle WebSocket connections`);
    const before = residentBytes(pid);
    const clients = await spawnJsonChild<{ opened: number; failed: number; first_error: string | null }>(
      'ws-idle-clients.ts',
      [url, String(n)],
    );
    try {
      if (clients.first.failed > 0)
        throw new Error(`${clients.first.failed} of ${n} connections failed: ${clients.first.first_error}`);
      await settle(1500);
      return (residentBytes(pid) - before) / n / 1024;
    } finally {
      await stopChild(clients.child);
    }
  };

  const platformKb = await measure('platform', platform.platformUrl, platform.platformPid);
  const bare = await spawnJsonChild<{ url: string }>('bare-server.ts', []);
  let bareKb: number;
  try {
    bareKb = await measure(
      'bare Fastify + @fastify/websocket',
      `${bare.first.url.replace(/^http/, 'ws')}/ws`,
      bare.child.pid!,
    );
  } finally {
    await stopChild(bare.child);
  }
  return row({
    id: 'memory.ws_kb',
    figure,
    value: platformKb,
    unit: 'KB',
    baseline: { label: 'bare Fastify + @fastify/websocket', value: bareKb },
    target,
    check: (kb) => kb <= 20,
    note: `${n} connections from a separate client process; server VmRSS after − before, ÷ ${n}`,
  });
}

/**
 * The README's start command, timed like the others: npm, its pre-step that checks the build is current, and the
 * server (which its script execs). Undefined when not run through npm or when a build would be due.
 */
async function npmStart(dataDir: string): Promise<{ listeningMs: number; readyMs: number } | undefined> {
  const npmCli = process.env['npm_execpath'];
  const current = spawnSync(process.execPath, [resolve(ROOT, 'scripts/start.mjs'), '--dry-run']);
  if (!npmCli || current.status !== 0) return undefined;
  const server = await launchServer({
    args: [npmCli, 'start', '--silent'],
    cwd: ROOT,
    env: benchEnvironment(dataDir, ADMIN_PASSWORD),
    readyPath: '/api/v1/ready',
  });
  await server.stop();
  return { listeningMs: server.listeningMs, readyMs: server.readyMs };
}
