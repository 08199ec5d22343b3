import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { platformCommand } from '../../scripts/platform-command.js';
import { backend } from '../helpers/backends.js';

// A container with a read-only root filesystem, where only the data folder can be written: the temporary
// folders SQLite looks for (/var/tmp, /tmp, the working folder) are read-only. A mount namespace (root only)
// makes them so for one process.
const canIsolate =
  backend === 'sqlite' && existsSync('/dev/shm') && spawnSync('unshare', ['-m', 'true']).status === 0;
const READ_ONLY_TEMP =
  'mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp && ' +
  'mount --bind /var/tmp /var/tmp && mount -o remount,bind,ro /var/tmp && cd /tmp && exec "$@"';
const PASSWORD = 'read-only-temp-password-1';

describe.skipIf(!canIsolate)('SQLite with no writable temporary folder', { timeout: 90_000 }, () => {
  let child: ChildProcess | undefined;
  // Outside every folder SQLite would take for temporary files, and writable.
  const dataDir = canIsolate ? mkdtempSync(join('/dev/shm', 'platform-ro-')) : '';
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stores every event of concurrent emits (batches of many rows need no temporary file)', async () => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (!k.startsWith('PLATFORM') && k !== 'TMPDIR' && k !== 'SQLITE_TMPDIR') env[k] = v;
    }
    Object.assign(env, {
      PLATFORM__STORAGE__DATA_DIR: dataDir,
      PLATFORM__SERVER__PORT: '0',
      PLATFORM__LOGGING__LEVEL: 'error',
      PLATFORM__AUTH__ARGON2_MEMORY_KIB: '1024',
      PLATFORM__AUTH__ARGON2_TIME_COST: '1',
      PLATFORM__RATE_LIMITS__AUTHENTICATED__MAX: '100000',
      PLATFORM_ADMIN_PASSWORD: PASSWORD,
    });
    const started = spawn(
      'unshare',
      ['-m', 'sh', '-c', READ_ONLY_TEMP, 'sh', process.execPath, ...platformCommand().args, 'serve'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = started;
    let out = '';
    started.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    started.stderr.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const base = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready in time:\n${out}`)), 60_000);
      started.stdout.on('data', () => {
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      started.once('exit', () => reject(new Error(`exited before it was ready:\n${out}`)));
    });

    const login = await fetch(`${base}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
    // 64 emits at a time write batches of tens of events, each a statement of many rows over pages already
    // in the file: SQLite keeps their statement journal, which it spilled to a temporary file past 64 KiB.
    const total = 1200;
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < total) {
        next += 1;
        const res = await fetch(`${base}/api/v1/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ event_type: 'readonly.temp', data: { text: 'x'.repeat(2000) } }),
        });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    expect(Object.fromEntries(statuses)).toEqual({ 201: total });

    const list = await fetch(`${base}/api/v1/events?event_type=readonly.temp&per_page=1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await list.json()) as { data: { pagination: { total: number } } };
    expect(body.data.pagination.total).toBe(total);
  });
});
