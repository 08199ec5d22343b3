/**
 * One server under load for bench/emit-throughput.ts, in its own process: `bare` (a plain Fastify route that
 * parses the body and answers 201), `sqlite` or `postgres` (the platform's POST /api/v1/events).
 * Prints one JSON line {url, token} when ready; stops on SIGTERM.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { loadBootConfig } from '../src/config/load-config.js';
import { createPlatform } from '../src/server.js';
import { RAISED_RATE_LIMITS } from './bench-config.js';
import { tempPostgresDatabase } from './bench-database.js';

const mode = process.argv[2] ?? 'bare';
const ADMIN_PASSWORD = 'bench-admin-password';

async function bare(): Promise<{ url: string; stop: () => Promise<void> }> {
  const app = Fastify({ logger: false });
  app.post('/api/v1/events', async (request, reply) => {
    const body = request.body as { event_type?: string };
    return reply.code(201).send({ success: true, data: { event: { event_type: body.event_type } } });
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, stop: () => app.close() };
}

async function platform(): Promise<{ url: string; token: string; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'platform-bench-'));
  let dropDatabase: (() => Promise<void>) | undefined;
  const tree: Record<string, unknown> = {
    server: { port: 0, environment: 'bench' },
    storage: { data_dir: dir },
    logging: { level: 'warn' },
    rate_limits: RAISED_RATE_LIMITS,
  };
  if (mode === 'postgres') {
    const database = await tempPostgresDatabase(`platform_bench_${process.pid}`);
    dropDatabase = database.drop;
    tree['database'] = { url: database.url, pool_max: 20 };
  }
  const boot = loadBootConfig({
    env: { PLATFORM_ADMIN_PASSWORD: ADMIN_PASSWORD },
    cwd: dir,
    overrides: tree as never,
  });
  const p = await createPlatform({ boot, print: () => {} });
  const url = await p.listen();
  const login = await fetch(`${url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
  return {
    url,
    token,
    stop: async () => {
      await p.close();
      rmSync(dir, { recursive: true, force: true });
      await dropDatabase?.();
    },
  };
}

const server = mode === 'bare' ? { ...(await bare()), token: '' } : await platform();
process.stdout.write(`${JSON.stringify({ url: server.url, token: server.token })}\n`);
process.on('SIGTERM', () => {
  server.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
