/** A helper script of the benchmarks in a child process of its own, which announces itself with a JSON line. */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = resolve(import.meta.dirname, '..');

export interface JsonChild<T> {
  child: ChildProcess;
  /** The first stdout line that starts with `{`, parsed. */
  first: T;
  /** Every later stdout line. */
  rest: string[];
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
}

/** `node --import tsx bench/<script> ...args`; stderr goes to ours. */
export async function spawnJsonChild<T>(script: string, args: string[]): Promise<JsonChild<T>> {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, 'bench', script), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const lines = createInterface({ input: child.stdout! });
  const rest: string[] = [];
  let first: T | undefined;
  await new Promise<void>((resolveFirst, reject) => {
    lines.on('line', (line) => {
      if (first === undefined && line.startsWith('{')) {
        first = JSON.parse(line) as T;
        resolveFirst();
      } else rest.push(line);
    });
    lines.once('close', () =>
      first === undefined ? reject(new Error(`${script} exited before it printed its JSON line`)) : undefined,
    );
  });
  return { child, first: first as T, rest, exited };
}

/** Runs a script to its end; returns every stdout line. */
export async function runToEnd(
  script: string,
  args: string[],
): Promise<{ code: number | null; lines: string[] }> {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, 'bench', script), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  for await (const line of createInterface({ input: child.stdout! })) lines.push(line);
  const code = await new Promise<number | null>((r) =>
    child.exitCode !== null ? r(child.exitCode) : child.once('exit', (c) => r(c)),
  );
  return { code, lines };
}
