import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { builtConsole } from './built-console.js';

/** What a browser downloads to show the first page: index.html and every script and stylesheet it references. */
function firstLoadFiles(dist: string): string[] {
  const html = readFileSync(join(dist, 'index.html'), 'utf8');
  const refs = [...html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+)"/g)].map((m) => m[1]!);
  return ['index.html', ...refs];
}

describe('the console is served at /console', () => {
  let t: TestPlatform;
  let dist: string;
  beforeAll(async () => {
    dist = await builtConsole();
    t = await startPlatform({ console: { dist_dir: dist } });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('answers /console and every client route below it with the page, under a strict content security policy', async () => {
    for (const url of ['/console', '/console/', '/console/users', '/console/events/evt_123?x=1']) {
      const res = await t.request('GET', url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toContain('<div id="app"></div>');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    }
  });

  it('serves the hashed assets with a year of caching, precompressed for clients that accept it', async () => {
    const script = firstLoadFiles(dist).find((f) => f.endsWith('.js'))!;
    const plain = await t.request('GET', `/console/${script}`);
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toContain('javascript');
    expect(plain.headers['cache-control']).toContain('immutable');
    expect(plain.body).toBe(readFileSync(join(dist, script), 'utf8'));
    const br = await t.request('GET', `/console/${script}`, { headers: { 'accept-encoding': 'br, gzip' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers['vary']).toContain('accept-encoding');
  });

  it('answers a missing asset with a 404 in the envelope, not the page', async () => {
    const res = await t.request('GET', '/console/assets/missing-0000.js');
    expect(res.statusCode).toBe(404);
    expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
  });

  it('keeps the console out of the OpenAPI document, out of rate limits, and open during maintenance', async () => {
    const doc = (await t.request('GET', '/openapi.json')).data;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
    const res = await t.request('GET', '/console');
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    const token = await t.adminToken();
    await t.request('POST', '/api/v1/admin/system/maintenance', {
      token,
      body: { enabled: true, allow_admin_access: false },
    });
    try {
      expect((await t.request('GET', '/console/maintenance')).statusCode).toBe(200);
    } finally {
      await t.request('POST', '/api/v1/admin/system/maintenance', { token, body: { enabled: false } });
    }
  });

  it('downloads less than 200 KB gzipped on first load', () => {
    const files = firstLoadFiles(dist);
    expect(files.some((f) => f.endsWith('.js'))).toBe(true);
    expect(files.some((f) => f.endsWith('.css'))).toBe(true);
    const gzipped = files.reduce(
      (sum, f) => sum + gzipSync(readFileSync(join(dist, f)), { level: 9 }).length,
      0,
    );
    // Everything the build produced, lazy chunks included, stays within the budget too.
    const everything = readdirSync(join(dist, 'assets'))
      .filter((f) => /\.(js|css)$/.test(f))
      .reduce((sum, f) => sum + gzipSync(readFileSync(join(dist, 'assets', f)), { level: 9 }).length, 0);
    expect(gzipped).toBeLessThan(200 * 1024);
    expect(everything).toBeLessThan(200 * 1024);
  });
});

describe('without a built console', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ console: { dist_dir: join(tmpdir(), 'platform-console-no-such-build') } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers /console with a short page saying how to build it', async () => {
    for (const url of ['/console', '/console/users']) {
      const res = await t.request('GET', url);
      expect(res.statusCode).toBe(503);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toContain('npm run build:console');
      expect(res.body).not.toContain('no-such-build');
    }
  });
});

describe('with the console turned off', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ console: { enabled: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('has no /console route at all', async () => {
    const res = await t.request('GET', '/console');
    expect(res.statusCode).toBe(404);
    expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
  });
});
