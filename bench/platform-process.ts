/**
 * Starts `platform serve` in a child process of its own (so it gets its own core), in a temporary data
 * folder that is removed when it stops. The built `dist/` is used when it is at least as new as every
 * source file; otherwise the sources run through tsx, and the label says so.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { platformCommand } from '../scripts/platform-command.js';
import { benchEnvironment } from './bench-config.js';

export const ADMIN_PASSWORD = 'bench-admin-password';
const _ROOT = resolve(import.meta.dirname, '..');

export interface PlatformRuntime {
  /** `dist` or `tsx`, with the reason when the sources had to be used. */
  label: string;
  args: string[];
}

/**
 * `node dist/platform/main.js serve` when the build is at least as new as every source file (or when the
 * caller has just built it: `justBuilt`), else tsx. To profile the platform under a benchmark's load,
 * `PLATFORM_BENCH_NODE_ARGS` adds node options (`--cpu-prof --cpu-prof-dir=/tmp/prof`) and
 * `PLATFORM_BENCH_ENTRY` runs another entry (`dist/src/main.js`, whose names read better than the bundle's).
 */
export function platformRuntime(options: { justBuilt?: boolean } = {}): PlatformRuntime {
  // The runner's --build also tells the scripts it starts (bench/webhook-throughput.ts) through the environment.
  const justBuilt = options.justBuilt ?? process.env.PLATFORM_BENCH_JUST_BUILT === '1';
  const command = platformCommand({ justBuilt });
  const nodeArgs = benchNodeArgs();
  const entry = process.env.PLATFORM_BENCH_ENTRY;
  const args = entry ? [resolve(entry)] : command.args;
  const label = entry ? `${entry} (PLATFORM_BENCH_ENTRY)` : command.label;
  return { label, args: [...nodeArgs, ...args, 'serve'] };
}

/** `PLATFORM_BENCH_NODE_ARGS`, split: node options for every platform a benchmark starts (also bench/emit-server.ts). */
export function benchNodeArgs(): string[] {
  return (process.env.PLATFORM_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
}

export interface PlatformProcess {
  url: string;
  pid: number;
  dataDir: string;
  /** From spawn to the `listening on` line, in ms. */
  listeningMs: number;
  /** From spawn to the first 200 of GET /api/v1/ready, in ms. */
  readyMs: number;
  /** SIGTERM, wait for the exit; removes the data folder unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export interface StartOptions {
  runtime: PlatformRuntime;
  /** An existing data folder (a warm start); a new temporary one otherwise. */
  dataDir?: string;
  /** Extra environment (PLATFORM__… keys), e.g. a PostgreSQL database.url. */
  env?: Record<string, string>;
}

export async function startPlatformProcess(options: StartOptions): Promise<PlatformProcess> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'platform-bench-'));
  try {
    const server = await launchServer({
      args: options.runtime.args,
      // The data folder is also the working folder, so no platform.config.* of the checkout is picked up.
      cwd: dataDir,
      env: { ...benchEnvironment(dataDir, ADMIN_PASSWORD), ...options.env },
      readyPath: '/api/v1/ready',
    });
    return {
      ...server,
      dataDir,
      stop: async ({ keepData = false } = {}) => {
        await server.stop();
        if (!keepData) rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

export interface LaunchedServer {
  url: string;
  pid: number;
  listeningMs: number;
  readyMs: number;
  stop(): Promise<void>;
}

/**
 * Spawns `node ...args` and times it: to the `listening on <url>` line on stdout, then to the first 200 of
 * `readyPath` (polled every 5 ms).
 */
export async function launchServer(options: {
  args: string[];
  cwd: string;
  env: Record<string, string>;
  readyPath: string;
}): Promise<LaunchedServer> {
  const started = performance.now();
  const child = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < 8000) stderr += chunk;
  });
  let url: string | undefined;
  let listeningMs = 0;
  for await (const line of createInterface({ input: child.stdout! })) {
    const match = /^listening on (\S+)/.exec(line);
    if (match) {
      listeningMs = performance.now() - started;
      url = match[1];
      break;
    }
  }
  // The rest of stdout is drained so a full pipe never blocks the server.
  child.stdout!.resume();
  if (!url) {
    await stopChild(child);
    await new Promise((r) => setTimeout(r, 100));
    throw new Error(`the server did not start (exit ${child.exitCode ?? child.signalCode}):\n${stderr}`);
  }
  const base = url;
  const deadline = performance.now() + 30_000;
  let readyMs = 0;
  while (performance.now() < deadline) {
    const res = await fetch(`${base}${options.readyPath}`).catch(() => undefined);
    await res?.body?.cancel();
    if (res?.status === 200) {
      readyMs = performance.now() - started;
      break;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  if (readyMs === 0) {
    await stopChild(child);
    throw new Error(`the server did not become ready within 30 s:\n${stderr}`);
  }
  return { url: base, pid: child.pid!, listeningMs, readyMs, stop: () => stopChild(child) };
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Logs in as the bootstrap admin; returns the access token. */
export async function adminToken(url: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { access_token: string } }).data.access_token;
}

/** Creates an API key of the admin with every permission; returns the key. */
export async function adminApiKey(url: string, token: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'bench' }),
  });
  if (res.status !== 201) throw new Error(`api key creation failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { key: string } }).data.key;
}
