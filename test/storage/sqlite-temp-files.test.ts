import { type ChildProcess, spawn } from 'node:child_process';
import { type FSWatcher, mkdtempSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { platformCommand } from '../../scripts/platform-command.js';

// A container with a read-only root filesystem has no writable temporary folder. SQLite creates its temporary
// files (`etilqs_…`) in SQLITE_TMPDIR when that is set: a folder watched here sees every file SQLite opens
// there, even one deleted at once. None may appear, so the embedded mode needs no writable temporary folder.
const PASSWORD = 'temp-files-password-1';

describe('SQLite temporary files', { timeout: 90_000 }, () => {
  let child: ChildProcess | undefined;
  let watcher: FSWatcher | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-data-'));
  const sqliteTemp = mkdtempSync(join(tmpdir(), 'platform-sqlite-temp-'));
  afterAll(async () => {
    watcher?.close();
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(sqliteTemp, { recursive: true, force: true });
  });

  it('are never written while concurrent emits are stored in batches of many rows', async () => {
    const created: string[] = [];
    watcher = watch(sqliteTemp, (_event, name) => {
      if (name) created.push(name);
    });
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PLATFORM')) env[k] = v;
    Object.assign(env, {
      SQLITE_TMPDIR: sqliteTemp,
      PLATFORM__STORAGE__DATA_DIR: dataDir,
      PLATFORM__SERVER__PORT: '0',
      PLATFORM__LOGGING__LEVEL: 'error',
      PLATFORM__AUTH__ARGON2_MEMORY_KIB: '1024',
      PLATFORM__AUTH__ARGON2_TIME_COST: '1',
      PLATFORM__RATE_LIMITS__AUTHENTICATED__MAX: '100000',
      PLATFORM_ADMIN_PASSWORD: PASSWORD,
    });
    const started = spawn(process.execPath, [...platformCommand().args, 'serve'], {
      cwd: dataDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
    // Watch events arrive on this process's loop: give the last ones a turn.
    await new Promise((r) => setTimeout(r, 200));
    expect(created.filter((name) => name.startsWith('etilqs_'))).toEqual([]);
  });
});
