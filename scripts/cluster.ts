/**
 * `npm run cluster [-- --instances 3 --port 8080]`: a local cluster for trying cluster mode — N platform
 * instances on consecutive ports (8081…) sharing PostgreSQL and Redis, behind a round-robin proxy on 8080.
 * Ctrl-C stops them all gracefully. See docs/deploy.md.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PROJECT_ROOT } from '../src/system/platform-info.js';
import { startClusterProxy } from './cluster-proxy.js';

const USAGE = `Usage: npm run cluster -- [options]

  --instances <n>      how many instances (default 3)
  --port <port>        the proxy's port (default 8080); instances take the ports after it (8081…)
  --host <host>        where the proxy and instances listen (default 127.0.0.1)
  --database <url>     PostgreSQL (default postgres://postgres@127.0.0.1:5432/platform_cluster; created if missing)
  --redis <url>        Redis (default redis://127.0.0.1:6379)
  --data-dir <dir>     the storage.data_dir all instances share (default ./data/cluster)
  -h, --help           show this help

Other settings come from the environment (PLATFORM__…) and are passed to every instance.`;

const require = createRequire(import.meta.url);
const TSX = pathToFileURL(require.resolve('tsx')).href;
const MAIN = join(PROJECT_ROOT, 'src', 'main.ts');

interface Running {
  name: string;
  url: string;
  child: ChildProcess;
  exited: Promise<void>;
}

function options() {
  const { values } = parseArgs({
    options: {
      instances: { type: 'string', default: '3' },
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      database: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/platform_cluster' },
      redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
      'data-dir': { type: 'string', default: './data/cluster' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const instances = Number(values.instances);
  const port = Number(values.port);
  if (values.help || !Number.isInteger(instances) || instances < 1 || !Number.isInteger(port) || port < 1) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(values.help ? 0 : 2);
  }
  return { ...values, instances, port, dataDir: resolve(values['data-dir']) };
}

/** Creates the database named in `url` when it does not exist yet (connecting to `postgres` to do so). */
async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`unsupported database name '${name}'`);
  const adminUrl = new URL(url);
  adminUrl.pathname = '/postgres';
  const client = new pg.Client({ connectionString: adminUrl.toString(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) {
      await client.query(`create database "${name}"`);
      process.stdout.write(`created database ${name}\n`);
    }
  } finally {
    await client.end();
  }
}

/** Starts one instance and resolves with its URL once it prints `listening on …`. */
function startInstance(name: string, port: number, env: NodeJS.ProcessEnv): Promise<Running> {
  const child = spawn(process.execPath, ['--import', TSX, MAIN, 'serve'], {
    cwd: PROJECT_ROOT,
    env: { ...env, PLATFORM__SERVER__PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: Ctrl-C reaches only this script, which then stops each instance with one SIGTERM
    // (a second signal would make an instance exit without draining).
    detached: true,
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return new Promise((resolveStart, rejectStart) => {
    let pending = '';
    const prefix = (stream: NodeJS.WriteStream) => (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        stream.write(`[${name}] ${line}\n`);
        const match = /^listening on (\S+)/.exec(line);
        if (match) resolveStart({ name, url: match[1]!, child, exited });
      }
    };
    child.stdout.on('data', prefix(process.stdout));
    child.stderr.on('data', prefix(process.stderr));
    child.once('exit', (code, signal) =>
      rejectStart(new Error(`instance ${name} ended (${code ?? signal})`)),
    );
  });
}

async function main(): Promise<void> {
  const opts = options();
  await ensureDatabase(opts.database);
  const env: NodeJS.ProcessEnv = {
    // The proxy is on this machine: believe its X-Forwarded-For, so rate limits and blocks see real clients.
    PLATFORM__SERVER__TRUSTED_PROXIES: '127.0.0.1,::1',
    ...process.env,
    PLATFORM__SERVER__HOST: opts.host,
    PLATFORM__DATABASE__URL: opts.database,
    PLATFORM__REDIS__URL: opts.redis,
    PLATFORM__STORAGE__DATA_DIR: opts.dataDir,
  };
  const running: Running[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('stopping the cluster…\n');
    for (const r of running) r.child.kill('SIGTERM');
    await Promise.all(running.map((r) => r.exited));
    await proxy?.close();
    process.exit(code);
  };
  let proxy: Awaited<ReturnType<typeof startClusterProxy>> | undefined;
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  // Detached instances would outlive a script that dies some other way.
  process.on('exit', () => {
    for (const r of running) if (r.child.exitCode === null) r.child.kill('SIGKILL');
  });
  try {
    // The first instance alone: it migrates the database and creates the admin; the others then start together.
    const names = Array.from(
      { length: opts.instances },
      (_, n) => String.fromCharCode(65 + (n % 26)) + (n >= 26 ? n : ''),
    );
    running.push(await startInstance(names[0]!, opts.port + 1, env));
    const rest = await Promise.all(
      names.slice(1).map((name, n) => startInstance(name, opts.port + 2 + n, env)),
    );
    running.push(...rest);
    proxy = await startClusterProxy(
      opts.host,
      opts.port,
      running.map((r) => new URL(r.url)),
    );
  } catch (err) {
    process.stderr.write(`cluster failed to start: ${(err as Error).message}\n`);
    await stopAll(1);
    return;
  }
  for (const r of running) {
    // An instance that dies takes the cluster down with it, so a broken start is not mistaken for a cluster.
    void r.exited.then(() => {
      if (!stopping) {
        process.stderr.write(`instance ${r.name} exited; stopping the cluster\n`);
        void stopAll(1);
      }
    });
  }
  process.stdout.write(
    `\ncluster of ${running.length} on PostgreSQL ${new URL(opts.database).pathname.slice(1)} and Redis ${opts.redis}\n` +
      running.map((r) => `  instance ${r.name}: ${r.url}\n`).join('') +
      `  proxy (round robin, HTTP, SSE and WebSocket): ${proxy.url}\n` +
      'Ctrl-C stops them all.\n',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`cluster: ${(err as Error).message}\n`);
  process.exit(1);
});
