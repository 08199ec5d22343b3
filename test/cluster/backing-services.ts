import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { eventually } from '../helpers/eventually.js';

/**
 * A PostgreSQL cluster and a Redis server that belong to one test file, on free 127.0.0.1 ports, so that file
 * can stop and start them while the rest of the suite keeps using the machine's shared 5432 and 6379 (which
 * nothing here ever touches). Each stops and starts again on the same port and data, as a restart would.
 */

const run = promisify(execFile);

/** A port nothing listens on right now (the OS picks it; it is released before the server binds it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function answers(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  if (!(await eventually(check, ms))) throw new Error(`${what} (waited ${ms} ms)`);
}

/** PostgreSQL refuses to run as root: as root, commands run as the `postgres` OS user. */
const asRoot = process.getuid?.() === 0;
const pgUser = () => {
  const id = (name: string) => Number(execFileSync('id', [name, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
};

function pgBin(name: string): string {
  const root = '/usr/lib/postgresql';
  // The newest installed version (`15`, `16`, …), or the PATH when there is none there.
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', name)))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return versions[0] ? join(root, versions[0], 'bin', name) : name;
}

function pgCommand(name: string, args: string[]): [string, string[]] {
  return asRoot ? ['runuser', ['-u', 'postgres', '--', pgBin(name), ...args]] : [pgBin(name), args];
}

export class PrivatePostgres {
  private running = false;
  private readonly data: string;
  private readonly exitHook = () => this.stopNow();

  private constructor(
    private readonly dir: string,
    readonly port: number,
  ) {
    this.data = join(dir, 'data');
  }

  /** `initdb` into a fresh temp folder (trust auth, user `postgres`), then starts the server. */
  static async create(): Promise<PrivatePostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'platform-pg-'));
    if (asRoot) {
      const { uid, gid } = pgUser();
      chownSync(dir, uid, gid);
    }
    const server = new PrivatePostgres(dir, await freePort());
    try {
      await run(...pgCommand('initdb', ['-D', server.data, '-A', 'trust', '-U', 'postgres', '--no-sync']), {
        timeout: 60_000,
      });
      // If the test process dies without its afterAll, the server must not outlive it.
      process.once('exit', server.exitHook);
      await server.start();
    } catch (err) {
      await server.destroy();
      throw err;
    }
    return server;
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  answers(): Promise<boolean> {
    return answers(async () => {
      const client = new pg.Client({ connectionString: this.url(), connectionTimeoutMillis: 1000 });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('select 1');
      } finally {
        await client.end().catch(() => {});
      }
    });
  }

  async start(): Promise<void> {
    if (this.running) return;
    // Durability settings off: the data lives as long as the test file, and the shared disk stays quiet.
    const options = [
      `-p ${this.port}`,
      `-k ${this.dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=100',
    ].join(' ');
    await run(
      ...pgCommand('pg_ctl', ['-D', this.data, '-l', join(this.dir, 'log'), '-o', options, '-w', 'start']),
      { timeout: 60_000 },
    );
    this.running = true;
    await waitUntil('the private PostgreSQL did not answer', () => this.answers());
  }

  /** A fast shutdown: open connections are ended (57P01), as when an operator restarts PostgreSQL. */
  async stop(): Promise<void> {
    if (!this.running) return;
    await run(...pgCommand('pg_ctl', ['-D', this.data, '-m', 'fast', '-w', 'stop']), { timeout: 60_000 });
    this.running = false;
    await waitUntil('the private PostgreSQL still answers', async () => !(await this.answers()));
  }

  async destroy(): Promise<void> {
    process.removeListener('exit', this.exitHook);
    if (this.running || existsSync(join(this.data, 'postmaster.pid'))) {
      await run(...pgCommand('pg_ctl', ['-D', this.data, '-m', 'immediate', '-w', 'stop']), {
        timeout: 60_000,
      }).catch(() => {});
      this.running = false;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private stopNow(): void {
    try {
      execFileSync(...pgCommand('pg_ctl', ['-D', this.data, '-m', 'immediate', 'stop']), { stdio: 'ignore' });
    } catch {}
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export class PrivateRedis {
  private child: ChildProcess | undefined;
  private readonly exitHook = () => this.child?.kill('SIGKILL');

  private constructor(
    private readonly dir: string,
    readonly port: number,
  ) {}

  /** A `redis-server` child process without persistence: a restart comes back empty, as the suite's does. */
  static async create(): Promise<PrivateRedis> {
    const server = new PrivateRedis(mkdtempSync(join(tmpdir(), 'platform-redis-')), await freePort());
    process.once('exit', server.exitHook);
    try {
      await server.start();
    } catch (err) {
      await server.destroy();
      throw err;
    }
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  answers(): Promise<boolean> {
    return answers(async () => {
      const redis = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000 });
      redis.on('error', () => {});
      try {
        await redis.connect();
        await redis.ping();
      } finally {
        redis.disconnect();
      }
    });
  }

  async start(): Promise<void> {
    if (this.child) return;
    const args = ['--bind', '127.0.0.1', '--port', String(this.port), '--save', '', '--appendonly', 'no'];
    const child = spawn('redis-server', [...args, '--dir', this.dir], { stdio: 'ignore' });
    this.child = child;
    child.once('exit', () => {
      if (this.child === child) this.child = undefined;
    });
    await waitUntil('the private Redis did not answer', () => this.answers());
  }

  /** SIGKILL: every connection drops at once and nothing is saved. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.child = undefined;
  }

  async destroy(): Promise<void> {
    process.removeListener('exit', this.exitHook);
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
