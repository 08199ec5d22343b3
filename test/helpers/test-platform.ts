import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { ConfigTree } from '../../src/config/config-tree.js';
import { mergeTrees } from '../../src/config/config-tree.js';
import { loadBootConfig } from '../../src/config/load-config.js';
import { lazySchemaCompilers } from '../../src/http/lazy-schema-compilers.js';
import { createPlatform, type Platform, type PlatformOptions } from '../../src/server.js';
import { backend, databaseUrl, PG_ADMIN_URL, REDIS_URL } from './backends.js';
import { type OpenApiDocument, ResponseContractError, ResponseValidator } from './response-validator.js';

export const ADMIN_PASSWORD = 'admin-password-1';

export interface TestPlatform {
  platform: Platform;
  backend: 'sqlite' | 'cluster';
  /** The same storage and Redis prefix, for starting a second instance on it. */
  storage: ConfigTree;
  request(
    method: string,
    url: string,
    options?: {
      token?: string;
      apiKey?: string;
      body?: unknown;
      headers?: Record<string, string>;
      /** The client's socket address (inject's default is 127.0.0.1). */
      remoteAddress?: string;
    },
  ): Promise<LightMyRequestResponse & { data: any }>;
  login(username: string, password: string): Promise<{ access: string; refresh: string }>;
  adminToken(): Promise<string>;
  /** Creates a user with the given roles and logs in; returns its id and tokens. */
  createUser(
    username: string,
    roles?: string[],
    password?: string,
  ): Promise<{ id: string; access: string; refresh: string }>;
  close(): Promise<void>;
}

/** Fast password hashing and generous limits, so tests spend their time on behaviour. */
const TEST_DEFAULTS: ConfigTree = {
  server: { port: 0, environment: 'test' },
  logging: { level: 'silent' },
  auth: { argon2_memory_kib: 1024, argon2_time_cost: 1 },
  rate_limits: { authenticated: { max: 100_000 }, anonymous: { max: 100_000 }, auth: { max: 100_000 } },
  webhooks: { allow_private_targets: true },
};

/**
 * The route schemas' compilers of a test platform: PLATFORM_TEST_PRECOMPILED_SCHEMAS=dist/platform/precompiled-schemas
 * runs the tests on the build's precompiled validators and serializers (as the bundle has them) instead of
 * compiling each schema from the sources.
 */
function testSchemaCompilers(): PlatformOptions['schemaController'] {
  const dir = process.env['PLATFORM_TEST_PRECOMPILED_SCHEMAS'];
  return dir ? lazySchemaCompilers({ precompiledDir: resolve(dir) }) : undefined;
}

/** Isolated storage for one test platform: a temporary SQLite folder, or a new PostgreSQL database + Redis prefix. */
export async function provisionStorage(): Promise<{ tree: ConfigTree; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'platform-test-'));
  if (backend === 'sqlite') {
    return {
      tree: { storage: { data_dir: dir } },
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `platform_test_${randomBytes(6).toString('hex')}`;
  const prefix = `test:${name}:`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  return {
    tree: {
      storage: { data_dir: dir },
      database: { url: databaseUrl(name) },
      redis: { url: REDIS_URL, key_prefix: prefix },
    },
    cleanup: async () => {
      rmSync(dir, { recursive: true, force: true });
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
}

export async function startPlatform(
  overrides: ConfigTree = {},
  options: {
    storage?: ConfigTree;
    env?: NodeJS.ProcessEnv;
    logStream?: { write(line: string): void };
    schemaController?: PlatformOptions['schemaController'];
  } = {},
): Promise<TestPlatform> {
  const provisioned = options.storage
    ? { tree: options.storage, cleanup: async () => {} }
    : await provisionStorage();
  const boot = loadBootConfig({
    env: { PLATFORM_ADMIN_PASSWORD: ADMIN_PASSWORD, ...(options.env ?? {}) },
    cwd: tmpdir(),
    overrides: mergeTrees(mergeTrees(TEST_DEFAULTS, provisioned.tree), overrides),
  });
  let platform: Platform;
  try {
    platform = await createPlatform({
      boot,
      print: () => {},
      ...(options.logStream ? { logStream: options.logStream } : {}),
      schemaController: options.schemaController ?? testSchemaCompilers(),
    });
  } catch (err) {
    await provisioned.cleanup();
    throw err;
  }
  let responses: ResponseValidator | undefined;
  const request: TestPlatform['request'] = async (method, url, opts = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
    if (opts.apiKey) headers['x-api-key'] = opts.apiKey;
    const res = await platform.app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(opts.remoteAddress === undefined ? {} : { remoteAddress: opts.remoteAddress }),
      ...(opts.body === undefined ? {} : { payload: opts.body as object }),
    });
    // Every response the suite receives must match the OpenAPI document: a drift fails the test that saw it.
    responses ??= new ResponseValidator(platform.app.swagger() as unknown as OpenApiDocument);
    const contentType = res.headers['content-type'];
    const problems = responses.check(method, url, res.statusCode, contentType?.toString(), res.body);
    if (problems.length > 0) throw new ResponseContractError(problems.join('\n'));
    let data: unknown;
    try {
      data = res.json();
    } catch {
      data = undefined;
    }
    return Object.assign(res, { data });
  };
  const login = async (username: string, password: string) => {
    const res = await request('POST', '/api/v1/auth/login', { body: { username, password } });
    if (res.statusCode !== 200) throw new Error(`login of ${username} failed: ${res.body}`);
    return { access: res.data.data.access_token as string, refresh: res.data.data.refresh_token as string };
  };
  let adminAccess: string | undefined;
  return {
    platform,
    backend,
    storage: provisioned.tree,
    request,
    login,
    async adminToken() {
      adminAccess ??= (await login('admin', ADMIN_PASSWORD)).access;
      return adminAccess;
    },
    async createUser(username, roles = ['user'], password = 'user-password-1') {
      const body = { username, email: `${username}@example.test`, password, roles };
      adminAccess ??= (await login('admin', ADMIN_PASSWORD)).access;
      let created = await request('POST', '/api/v1/admin/users', { token: adminAccess, body });
      if (created.statusCode === 401) {
        // The cached admin token was revoked by the test (logout, session revocation): log in again.
        adminAccess = (await login('admin', ADMIN_PASSWORD)).access;
        created = await request('POST', '/api/v1/admin/users', { token: adminAccess, body });
      }
      if (created.statusCode !== 201) throw new Error(`creating ${username} failed: ${created.body}`);
      const tokens = await login(username, password);
      return { id: created.data.data.user.id as string, ...tokens };
    },
    async close() {
      await platform.close();
      await provisioned.cleanup();
    },
  };
}
