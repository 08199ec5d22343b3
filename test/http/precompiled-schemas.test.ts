import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lazySchemaCompilers } from '../../src/http/lazy-schema-compilers.js';
import { cliEnv } from '../cli/cli-process.js';
import { ADMIN_PASSWORD, provisionStorage, startPlatform } from '../helpers/test-platform.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const BUNDLE = join(ROOT, 'dist/platform/main.js');
const PRECOMPILED = join(ROOT, 'dist/platform/precompiled-schemas');
const PROBE = join(ROOT, 'test/helpers/schema-compiler-probe.cjs');

const EMIT = { event_type: 'order.created', source: 'shop', data: { order_id: 42 }, priority: 7 };

// `npm test` builds first when the build is missing or older than the sources (scripts/test.mjs), as for
// npm-start.test.ts; CI builds before the tests. A stale build would hold the old schemas' functions.
const BUILT =
  spawnSync(process.execPath, [join(ROOT, 'scripts/start.mjs'), '--dry-run'], { cwd: ROOT }).status === 0;
const NOT_BUILT =
  'dist/ is missing or older than the sources: `npm test` builds it first; run `npm run build`';
describe('route schemas precompiled by the build', () => {
  let storage: Awaited<ReturnType<typeof provisionStorage>>;
  beforeAll(async () => {
    storage = await provisionStorage();
  });
  afterAll(async () => {
    await storage.cleanup();
  });

  it("the bundle's first GET and POST /api/v1/events (and the login before them) compile no schema, and validate as before", async () => {
    expect(BUILT && existsSync(BUNDLE), NOT_BUILT).toBe(true);
    const child = spawn(process.execPath, ['--require', PROBE, BUNDLE, 'serve'], {
      cwd: ROOT,
      env: cliEnv(storage.tree, {
        PLATFORM_ADMIN_PASSWORD: ADMIN_PASSWORD,
        PLATFORM__LOGGING__LEVEL: 'info',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      const base = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`not listening within 45 s:\n${out}\n${err}`)),
          45_000,
        );
        child.stdout.on('data', () => {
          const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (match?.[1]) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
      });
      const call = async (method: string, path: string, token?: string, body?: unknown) => {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: {
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: res.status, data: (await res.json()) as any };
      };
      const login = await call('POST', '/api/v1/auth/login', undefined, {
        username: 'admin',
        password: ADMIN_PASSWORD,
      });
      expect(login.status).toBe(200);
      const token = login.data.data.access_token as string;

      const emitted = await call('POST', '/api/v1/events', token, EMIT);
      expect(emitted.status).toBe(201);
      expect(emitted.data.data.event).toMatchObject({ event_type: 'order.created', priority: 7 });
      // The query string is converted ("2" is a number), the body is not ("7" is refused), defaults apply.
      const listed = await call(
        'GET',
        '/api/v1/events?per_page=2&event_type=order.created&start_time=2020-01-01T00:00:00Z',
        token,
      );
      expect(listed.status).toBe(200);
      expect(listed.data.data.events).toHaveLength(1);
      const refused = await call('POST', '/api/v1/events', token, { ...EMIT, priority: '7' });
      expect(refused.status).toBe(422);
      const leap = await call('GET', '/api/v1/events?start_time=2016-12-31T23:59:60Z', token);
      expect(leap.status).toBe(422);

      expect(err).not.toMatch(/schema compiler loaded/);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 60_000);

  it('from the sources, the build’s functions serve the first GET and POST /api/v1/events; without them, each schema is compiled', async () => {
    expect(BUILT && existsSync(PRECOMPILED), NOT_BUILT).toBe(true);
    for (const dir of [PRECOMPILED, join(ROOT, 'dist/none')]) {
      const compiled: string[] = [];
      const t = await startPlatform(
        {},
        {
          schemaController: lazySchemaCompilers({
            precompiledDir: dir,
            onRuntimeCompile: ({ kind, method, url }) => compiled.push(`${kind} ${method} ${url}`),
          }),
        },
      );
      try {
        const token = await t.adminToken();
        expect((await t.request('POST', '/api/v1/events', { token, body: EMIT })).statusCode).toBe(201);
        expect((await t.request('GET', '/api/v1/events?per_page=2', { token })).statusCode).toBe(200);
        const refused = await t.request('POST', '/api/v1/events', {
          token,
          body: { ...EMIT, priority: '7' },
        });
        expect(refused.statusCode).toBe(422);
        if (dir === PRECOMPILED) expect(compiled).toEqual([]);
        else expect(compiled.filter((c) => c.includes('/api/v1/events')).length).toBeGreaterThan(2);
      } finally {
        await t.close();
      }
    }
  }, 60_000);
});
