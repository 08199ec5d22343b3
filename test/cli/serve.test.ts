import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigTree } from '../../src/config/config-tree.js';
import { provisionStorage } from '../helpers/test-platform.js';
import { type CliProcess, canConnect, cliEnv, startCli } from './cli-process.js';

/** Reads one HTTP/1.1 response (headers plus Content-Length bytes of body) from a socket. */
function readResponse(socket: ReturnType<typeof connect>): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    let raw = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = raw.subarray(0, end).toString();
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (raw.length - end - 4 < length) return;
      socket.off('data', onData);
      resolve({ head, body: raw.subarray(end + 4, end + 4 + length).toString() });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed before a full response: ${raw.toString()}`)));
  });
}

// Each test spawns the CLI (a cold start of node + tsx + the platform): on a busy machine that takes a while.
describe('platform serve', { timeout: 90_000 }, () => {
  let cwd: string;
  let storage: { tree: ConfigTree; cleanup: () => Promise<void> };
  let running: CliProcess | undefined;
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'platform-serve-'));
    storage = await provisionStorage();
  });
  afterAll(async () => {
    running?.child.kill('SIGKILL');
    await running?.exited;
    await storage.cleanup();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('prints the generated admin password once on first start, then serves, then stops cleanly on SIGTERM', async () => {
    running = startCli(['serve'], { cwd, env: cliEnv(storage.tree) });
    const [, base, port] = await running.waitForLine(/listening on (http:\/\/127\.0\.0\.1:(\d+))\n/);
    const password = /password: (\S+)/.exec(running.stdout())?.[1];
    expect(password).toBeDefined();
    // the generated password was printed before the server said it is ready
    expect(running.stdout().indexOf('password:')).toBeLessThan(running.stdout().indexOf('listening on'));

    const health = await fetch(`${base}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'healthy' });
    const login = await fetch(`${base}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    expect(login.status).toBe(200);
    const session = (await login.json()) as { data: { password_change_required: boolean } };
    expect(session.data.password_change_required).toBe(true);

    // A request is in flight (headers sent, body not yet) when SIGTERM arrives: it still gets its answer.
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const body = JSON.stringify({ username: 'nobody-here', password: 'not-the-password' });
    socket.write(
      `POST /api/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    const answer = readResponse(socket);
    await new Promise((r) => setTimeout(r, 200));
    running.child.kill('SIGTERM');
    // the listener closes at once: new connections are refused while the in-flight request is pending
    const deadline = Date.now() + 10_000;
    while ((await canConnect(Number(port))) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(await canConnect(Number(port))).toBe(false);
    expect(running.child.exitCode).toBeNull();
    socket.write(body.slice(10));
    const { head, body: text } = await answer;
    expect(head).toMatch(/^HTTP\/1\.1 401 /);
    expect(JSON.parse(text)).toMatchObject({ success: false, error: { code: 'AUTHENTICATION_FAILED' } });
    socket.destroy();

    expect(await running.exited).toBe(0);
    expect(running.stdout()).toContain('stopped');
    expect(await canConnect(Number(port))).toBe(false);
    running = undefined;
  });

  it('does not print a password again on the next start', async () => {
    running = startCli(['serve'], { cwd, env: cliEnv(storage.tree) });
    const [, base] = await running.waitForLine(/listening on (http:\/\/127\.0\.0\.1:\d+)\n/);
    expect(running.stdout()).not.toContain('password:');
    expect((await fetch(`${base}/api/v1/health`)).status).toBe(200);
    running.child.kill('SIGINT');
    expect(await running.exited).toBe(0);
    running = undefined;
  });
});
