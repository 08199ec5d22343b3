import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { platformCommand } from '../../scripts/platform-command.js';
import type { ConfigTree } from '../../src/config/config-tree.js';

// Decided once per test file: the build when it is current (CI builds first), else the sources through tsx.
const PLATFORM = platformCommand().args;

/**
 * The environment of a CLI run on the given test storage: the parent's environment without any PLATFORM
 * variable, the storage as PLATFORM__… variables, fast password hashing, and quiet logs.
 */
export function cliEnv(storage: ConfigTree, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PLATFORM')) env[k] = v;
  const s = storage as {
    storage?: { data_dir?: string };
    database?: { url?: string };
    redis?: { url?: string; key_prefix?: string };
  };
  if (s.storage?.data_dir) env['PLATFORM__STORAGE__DATA_DIR'] = s.storage.data_dir;
  if (s.database?.url) env['PLATFORM__DATABASE__URL'] = s.database.url;
  if (s.redis?.url) env['PLATFORM__REDIS__URL'] = s.redis.url;
  if (s.redis?.key_prefix) env['PLATFORM__REDIS__KEY_PREFIX'] = s.redis.key_prefix;
  return {
    ...env,
    PLATFORM__AUTH__ARGON2_MEMORY_KIB: '1024',
    PLATFORM__AUTH__ARGON2_TIME_COST: '1',
    PLATFORM__LOGGING__LEVEL: 'warn',
    PLATFORM__SERVER__PORT: '0',
    ...extra,
  };
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name) once the process ended. */
  exited: Promise<number | string>;
  /** Resolves with the first stdout line matching the pattern; rejects if the process ends or time runs out. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/** Starts `platform <args>`: from `dist` when it is current, else from the TypeScript sources. */
export function startCli(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): CliProcess {
  const child = spawn(process.execPath, [...PLATFORM, ...args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const l of listeners) l();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      resolve(code ?? signal ?? -1);
      for (const l of listeners) l();
    });
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForLine(pattern, timeoutMs = 45_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = out.match(pattern);
          if (match) {
            done();
            resolve(match);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            done();
            reject(new Error(`process ended before ${pattern}:\n${out}\n${err}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${out}\n${err}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Runs `platform <args>` to its end. */
export async function runCli(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p = startCli(args, options);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 60_000);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
