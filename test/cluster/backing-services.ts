import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PG_ADMIN_URL, REDIS_URL } from '../helpers/backends.js';
import { eventually } from '../helpers/eventually.js';

const run = promisify(execFile);

/** The local PostgreSQL cluster (`/etc/postgresql/<version>/main`), as `pg_ctlcluster` names it. */
const pgVersion = () => readdirSync('/etc/postgresql')[0] ?? '';

async function answers(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

export const postgresAnswers = () =>
  answers(async () => {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.query('select 1');
    } finally {
      await client.end().catch(() => {});
    }
  });

export const redisAnswers = () =>
  answers(async () => {
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000 });
    redis.on('error', () => {});
    try {
      await redis.connect();
      await redis.ping();
    } finally {
      redis.disconnect();
    }
  });

/** `pg_ctlcluster … stop|start` (the documented way to restart the local PostgreSQL). */
export async function postgres(action: 'stop' | 'start'): Promise<void> {
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', pgVersion(), 'main', action], { timeout: 60_000 });
  const wanted = action === 'start';
  if (!(await eventually(async () => (await postgresAnswers()) === wanted, 30_000))) {
    throw new Error(`PostgreSQL did not ${action}`);
  }
}

export async function redis(action: 'stop' | 'start'): Promise<void> {
  if (action === 'stop')
    await run('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'shutdown', 'nosave']).catch(() => {});
  else
    await run('redis-server', [
      '--daemonize',
      'yes',
      '--bind',
      '127.0.0.1',
      '--port',
      '6379',
      '--save',
      '',
      '--appendonly',
      'no',
    ]);
  const wanted = action === 'start';
  if (!(await eventually(async () => (await redisAnswers()) === wanted, 30_000))) {
    throw new Error(`Redis did not ${action}`);
  }
}

/** Brings both services back if a test left either down; the rest of the suite needs them. */
export async function ensureServicesRunning(): Promise<void> {
  if (!(await postgresAnswers())) await postgres('start');
  if (!(await redisAnswers())) await redis('start');
}
