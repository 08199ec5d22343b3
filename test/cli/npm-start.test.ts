import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionStorage } from '../helpers/test-platform.js';
import { canConnect, cliEnv } from './cli-process.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** Whether `npm start` would start at once: its pre-step exits without building when the build is current. */
function buildIsCurrent(): boolean {
  const check = spawnSync(process.execPath, [join(ROOT, 'scripts/start.mjs'), '--dry-run'], {
    cwd: ROOT,
  });
  return check.status === 0;
}

// `npm test` builds first when the build is missing or older than the sources (scripts/test.mjs), and CI builds
// before it: a missing or stale build here is a failure, never a skip.
const BUILT = buildIsCurrent();
describe('npm start (after `npm run build`)', () => {
  let storage: Awaited<ReturnType<typeof provisionStorage>>;
  beforeAll(async () => {
    storage = await provisionStorage();
  });
  afterAll(async () => {
    await storage.cleanup();
  });

  it('goes straight to the server when nothing changed since the build, and SIGTERM to npm stops the server with it', async () => {
    expect(
      BUILT,
      'dist/ is missing or older than the sources: `npm test` builds it first; run `npm run build`',
    ).toBe(true);
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: cliEnv(storage.tree, { PLATFORM__LOGGING__LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    // 'close': npm has ended and so has every process writing to its output (the server shares the pipe).
    const exited = new Promise<number | string>((resolve) => {
      npm.on('close', (code, signal) => resolve(code ?? signal ?? -1));
    });
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not listening within 45 s:\n${out}`)), 45_000);
      npm.stdout.on('data', () => {
        const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
    });
    expect(out).not.toMatch(/building/);
    expect(await canConnect(port)).toBe(true);

    npm.kill('SIGTERM');
    // npm passes the signal to the server (its script execs node) and then ends by the same signal.
    expect(['SIGTERM', 0, 143]).toContain(await exited);
    // The server is gone with npm: it was left running when npm was stopped. (Its graceful shutdown on SIGTERM
    // is proven on the command itself by serve.test.ts.)
    expect(await canConnect(port)).toBe(false);
  }, 60_000);
});
