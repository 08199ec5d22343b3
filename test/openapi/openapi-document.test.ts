import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Record<string, string[]>[];
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}
type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
const ACCESS_TEXT =
  /No authentication required\.|Requires any authenticated caller\.|Requires permission `[a-z]+:[a-z*]+`\.|Requires the admin role( and scope `admin:[a-z]+`)?\./;

/**
 * Walks every operation of the document the running platform serves, so routes added by any module are held
 * to the same rules. A failure names the operation and what it lacks.
 */
describe('the OpenAPI document', () => {
  let t: TestPlatform;
  let doc: Doc;
  const operations: { method: string; path: string; op: Operation }[] = [];

  beforeAll(async () => {
    t = await startPlatform();
    const res = await t.request('GET', '/openapi.json');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    doc = res.data as Doc;
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item))
        if (METHODS.has(method)) operations.push({ method: method.toUpperCase(), path, op });
  });
  afterAll(async () => {
    await t.close();
  });

  it('is a valid OpenAPI 3.1.0 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(structuredClone(doc) as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(operations.length).toBeGreaterThan(10);
  });

  it('is served publicly, without the envelope, with the same content as the generator', async () => {
    expect(t.platform.app.swagger()).toEqual(doc);
    expect(doc).not.toHaveProperty('success');
  });

  it('gives every operation a unique operationId, a tag and a summary', () => {
    const problems: string[] = [];
    const seen = new Map<string, string>();
    for (const { method, path, op } of operations) {
      const name = `${method} ${path}`;
      if (!op.operationId) problems.push(`${name}: no operationId`);
      else if (seen.has(op.operationId))
        problems.push(`${name}: operationId ${op.operationId} also used by ${seen.get(op.operationId)}`);
      else seen.set(op.operationId, name);
      if (!op.tags || op.tags.length === 0) problems.push(`${name}: no tag`);
      if (!op.summary?.trim()) problems.push(`${name}: no summary`);
    }
    expect(problems).toEqual([]);
  });

  it('gives every operation a 2xx response with a schema, and the error envelope for every error status', () => {
    const problems: string[] = [];
    for (const { method, path, op } of operations) {
      const name = `${method} ${path}`;
      const responses = Object.entries(op.responses ?? {});
      const success = responses.filter(([code]) => /^2(\d\d|XX)$/.test(code));
      const withSchema = success.filter(([, r]) =>
        Object.values(r.content ?? {}).some((media) => media.schema !== undefined),
      );
      if (withSchema.length === 0) problems.push(`${name}: no 2xx response with a schema`);
      for (const [code, r] of responses) {
        if (!r.description) problems.push(`${name} ${code}: no description`);
        if (!/^[45]/.test(code)) continue;
        const json = r.content?.['application/json']?.schema as
          | { $ref?: string; properties?: object }
          | undefined;
        const enveloped =
          json?.$ref === '#/components/schemas/ErrorEnvelope' ||
          (json?.properties !== undefined && 'success' in json.properties && 'error' in json.properties);
        if (!enveloped) problems.push(`${name} ${code}: not the error envelope`);
      }
      for (const code of ['403', '500']) {
        if (!op.responses?.[code]) problems.push(`${name}: ${code} not documented`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('states each operation’s access rule in its description and its security requirement', () => {
    const problems: string[] = [];
    for (const { method, path, op } of operations) {
      const name = `${method} ${path}`;
      const rule = ACCESS_TEXT.exec(op.description ?? '')?.[0];
      if (!rule) {
        problems.push(`${name}: the description does not state the required permission`);
        continue;
      }
      const isPublic = rule === 'No authentication required.';
      if (!Array.isArray(op.security)) problems.push(`${name}: no security requirement`);
      else if (isPublic && op.security.length !== 0) problems.push(`${name}: public but has security`);
      else if (!isPublic && op.security.length === 0)
        problems.push(`${name}: protected but security is empty`);
      if (!isPublic && !op.responses?.['401']) problems.push(`${name}: protected but 401 not documented`);
    }
    expect(problems).toEqual([]);
    for (const scheme of ['bearerAuth', 'apiKeyAuth'])
      expect(doc.components.securitySchemes).toHaveProperty(scheme);
  });

  it('enforces what it documents: protected operations refuse an anonymous caller with 401', async () => {
    const problems: string[] = [];
    for (const { method, path, op } of operations) {
      if (!op.security) continue;
      const url = path.replace(/\{[^}]+\}/g, 'doc-test-id');
      const res = await t.request(method, url, { headers: { accept: 'application/json' } });
      const isPublic = op.security.length === 0;
      if (!isPublic && res.statusCode !== 401)
        problems.push(
          `${method} ${path}: documented as protected, answered ${res.statusCode} without credentials`,
        );
      if (isPublic && res.statusCode === 401)
        problems.push(`${method} ${path}: documented as public, answered 401 without credentials`);
      if (!isPublic && res.statusCode === 401 && res.headers['www-authenticate'] !== 'Bearer')
        problems.push(`${method} ${path}: 401 without WWW-Authenticate: Bearer`);
    }
    expect(problems).toEqual([]);
  });
});

describe('the API reference pages', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });

  it('serves swagger-ui at /docs as an HTML page, without credentials', async () => {
    let res = await t.request('GET', '/docs');
    for (let hops = 0; hops < 3 && res.statusCode >= 300 && res.statusCode < 400; hops++) {
      const location = String(res.headers['location']);
      res = await t.request('GET', new URL(location, 'http://localhost/docs/').pathname);
    }
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toMatch(/swagger-ui/i);
    // the page's own assets come from the platform, not from a CDN
    expect(res.body).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs)/);
  });

  it('serves Redoc at /redoc with its standalone bundle from the platform itself', async () => {
    const page = await t.request('GET', '/redoc');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('spec-url="/openapi.json"');
    expect(page.body).toContain('src="/redoc/redoc.standalone.js"');
    expect(page.body).not.toMatch(/https?:\/\//);
    const bundle = await t.request('GET', '/redoc/redoc.standalone.js');
    expect(bundle.statusCode).toBe(200);
    expect(bundle.headers['content-type']).toContain('javascript');
    expect(bundle.body.length).toBeGreaterThan(100_000);
  });

  it('keeps the reference pages and the document open while maintenance mode is on', async () => {
    const admin = await t.adminToken();
    const on = await t.request('POST', '/api/v1/admin/system/maintenance', {
      token: admin,
      body: { enabled: true, message: 'docs test', allow_admin_access: true },
    });
    expect(on.statusCode).toBe(200);
    expect((await t.request('GET', '/openapi.json')).statusCode).toBe(200);
    expect((await t.request('GET', '/redoc')).statusCode).toBe(200);
    const locked = await t.request('GET', '/api/v1/auth/me', {
      token: (await t.createUser('docs-user')).access,
    });
    expect(locked.statusCode).toBe(423);
    await t.request('POST', '/api/v1/admin/system/maintenance', { token: admin, body: { enabled: false } });
  });
});
