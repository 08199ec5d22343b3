/**
 * The first request of each of a few routes in a fresh process of the build (`dist/platform/main.js serve`, a new
 * SQLite folder): its time as the client sees it and how long it held the server's event loop (the longest
 * hold and the sum of the holds over 2 ms while it ran, bench/loop-hold-preload.mjs), and the server's RSS
 * 1 s after it began listening (a start without the probe). Issue 22: route schemas compiled on a route's
 * first request held the loop for tens of ms each; the build now precompiles them.
 *
 * Usage: tsx bench/first-requests.ts [--runs 3] [--entry dist/platform/main.js]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    entry: { type: 'string', default: 'dist/platform/main.js' },
  },
});
const ENTRY = resolve(values.entry);
const PRELOAD = resolve(import.meta.dirname, 'loop-hold-preload.mjs');
const PASSWORD = 'admin-password-1';

interface Server {
  child: ChildProcess;
  base: string;
  dir: string;
}

async function start(probe: boolean, holdsFile: string): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'platform-first-'));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PLATFORM')) env[k] = v;
  const child = spawn(process.execPath, [...(probe ? ['--import', PRELOAD] : []), ENTRY, 'serve'], {
    env: {
      ...env,
      PLATFORM_ADMIN_PASSWORD: PASSWORD,
      PLATFORM__STORAGE__DATA_DIR: dir,
      PLATFORM__SERVER__PORT: '0',
      PLATFORM__LOGGING__LEVEL: 'info',
      PLATFORM__AUTH__ARGON2_MEMORY_KIB: '1024',
      PLATFORM__AUTH__ARGON2_TIME_COST: '1',
      LOOP_HOLD_OUT: holdsFile,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const base = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`not listening:\n${out}`)), 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        ok(match[1]);
      }
    });
  });
  return { child, base, dir };
}

async function stop(server: Server): Promise<void> {
  const exited = new Promise((ok) => server.child.on('exit', ok));
  server.child.kill('SIGTERM');
  await exited;
  rmSync(server.dir, { recursive: true, force: true });
}

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

async function holds(server: Server, file: string): Promise<number[]> {
  server.child.kill('SIGUSR2');
  await sleep(50);
  return JSON.parse(readFileSync(file, 'utf8')) as number[];
}

const routes: [string, string, unknown?][] = [
  ['POST', '/api/v1/auth/login', { username: 'admin', password: PASSWORD }],
  ['GET', '/api/v1/events?per_page=20'],
  ['POST', '/api/v1/events', { event_type: 'order.created', source: 'shop', data: { order_id: 1 } }],
  ['GET', '/api/v1/events/stats?group_by=event_type'],
  ['POST', '/api/v1/admin/backup', {}],
];
const results: Record<string, { ms: number[]; max: number[]; sum: number[] }> = {};
const rss: number[] = [];
const holdsFile = join(mkdtempSync(join(tmpdir(), 'platform-holds-')), 'holds.json');
for (let run = 0; run < Number(values.runs); run++) {
  const plain = await start(false, holdsFile);
  await sleep(1000);
  rss.push(rssMb(plain.child.pid ?? 0));
  await stop(plain);

  const server = await start(true, holdsFile);
  await sleep(1000);
  let token = '';
  for (const [method, path, body] of routes) {
    await holds(server, holdsFile);
    const began = performance.now();
    const res = await fetch(`${server.base}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = await res.text();
    const ms = performance.now() - began;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status}`);
    if (path === '/api/v1/auth/login')
      token = (JSON.parse(answer) as { data: { access_token: string } }).data.access_token;
    const held = await holds(server, holdsFile);
    const name = `${method} ${path.split('?')[0]}`;
    results[name] ??= { ms: [], max: [], sum: [] };
    const row = results[name];
    row.ms.push(ms);
    row.max.push(Math.max(0, ...held));
    row.sum.push(held.reduce((a, b) => a + b, 0));
  }
  await stop(server);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const f = (x: number) => x.toFixed(1);
process.stdout.write(
  `entry ${values.entry}, ${values.runs} runs, load ${readFileSync('/proc/loadavg', 'utf8')}`,
);
process.stdout.write(
  '| first request | time ms (median) | longest hold ms | holds' +
    ' sum ms |\n| --- | ---: | ---: | ---: |\n',
);
for (const [route, r] of Object.entries(results)) {
  process.stdout.write(`| ${route} | ${f(median(r.ms))} | ${f(median(r.max))} | ${f(median(r.sum))} |\n`);
}
process.stdout.write(`RSS 1 s after listening: ${rss.map(f).join(', ')} MB (median ${f(median(rss))})\n`);
