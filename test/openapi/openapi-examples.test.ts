import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ErrorCode, errorCatalogue } from '../../src/http/error-catalogue.js';
import captured from '../../src/http/openapi-examples.json' with { type: 'json' };
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// ajv-formats is CommonJS: under ESM its function may sit on the default export's `default`.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsImport as unknown as { default?: AddFormats }).default ??
  addFormatsImport) as unknown as AddFormats;

interface MediaType {
  schema?: Record<string, unknown>;
  example?: unknown;
}
interface Operation {
  operationId?: string;
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, { content?: Record<string, MediaType> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components?: Record<string, unknown>;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

/** A status the code really carries: its catalogue status, or 400 for a VALIDATION_ERROR (decisions §1). */
function carries(code: string, status: number): boolean {
  const entry = errorCatalogue[code as ErrorCode];
  return entry !== undefined && (entry.status === status || (code === 'VALIDATION_ERROR' && status === 400));
}

/**
 * Everything wrong with the examples of a document: an operation without an example for a success body or a
 * request body, an error response without an example envelope, an example its schema refuses, an error
 * code that is not catalogued for the status. Each problem names the operation, the status and the media type.
 */
function exampleProblems(doc: Doc): string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true, logger: false });
  addFormats(ajv);
  const problems: string[] = [];
  // Most error responses share one schema: each distinct schema is compiled once.
  const compiled = new Map<string, ValidateFunction>();
  const check = (where: string, media: MediaType) => {
    if (media.example === undefined) return problems.push(`${where}: no example`);
    if (!media.schema) return;
    const key = JSON.stringify(media.schema);
    let validate = compiled.get(key);
    // The components ride along so `#/components/schemas/…` references resolve from the schema's root.
    validate ??= ajv.compile({ ...media.schema, components: doc.components ?? {} });
    compiled.set(key, validate);
    if (!validate(media.example))
      for (const e of (validate.errors ?? []).slice(0, 5))
        problems.push(`${where}: example${e.instancePath} ${e.message ?? 'is invalid'}`);
  };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const name = `${op.operationId ?? `${method.toUpperCase()} ${path}`}`;
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {}))
        check(`${name} request ${type}`, media);
      for (const [code, response] of Object.entries(op.responses ?? {})) {
        const content = Object.entries(response.content ?? {});
        if (/^2/.test(code) && content.length === 0) problems.push(`${name} ${code}: no body to exemplify`);
        for (const [type, media] of content) {
          check(`${name} ${code} ${type}`, media);
          const error = (media.example as { error?: { code?: string } } | undefined)?.error;
          if (/^[45]\d\d$/.test(code) && error && !carries(String(error.code), Number(code)))
            problems.push(`${name} ${code}: ${error.code} is not a catalogued code of status ${code}`);
        }
      }
    }
  }
  return problems;
}

describe('the examples of the OpenAPI document', () => {
  let t: TestPlatform;
  let doc: Doc;

  beforeAll(async () => {
    t = await startPlatform();
    const res = await t.request('GET', '/openapi.json');
    expect(res.statusCode).toBe(200);
    doc = res.data as Doc;
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives every request body, success body and error response an example its schema accepts', () => {
    expect(exampleProblems(doc)).toEqual([]);
  });

  it('gives every error response a catalogued error code of its own status', () => {
    const seen: string[] = [];
    for (const item of Object.values(doc.paths))
      for (const op of Object.values(item))
        for (const [code, response] of Object.entries(op.responses ?? {}))
          if (/^[45]/.test(code)) {
            const example = response.content?.['application/json']?.example as { error: { code: string } };
            seen.push(`${code} ${example?.error.code}`);
          }
    expect(seen.length).toBeGreaterThan(500);
    expect(seen.filter((s) => s.endsWith('undefined'))).toEqual([]);
  });

  it('keeps no captured example of an operation the document no longer has', () => {
    const ids = new Set(
      Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId)),
    );
    expect(Object.keys(captured).filter((id) => !ids.has(id))).toEqual([]);
  });

  it('holds no real credential: tokens, keys and secrets are placeholders', () => {
    const text = JSON.stringify(captured);
    const jwts = text.match(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g) ?? [];
    expect(jwts.filter((j) => !j.includes('EXAMPLE'))).toEqual([]);
    const keys = text.match(/plat_[A-Za-z0-9_-]{20,}/g) ?? [];
    expect(keys.filter((k) => !k.includes('EXAMPLE'))).toEqual([]);
    const secrets = [...text.matchAll(/"(?:secret|refresh_token|jwt_secret|key)":"([^"]*)"/g)].map(
      (m) => m[1],
    );
    expect(secrets.filter((s) => s && !/^(EXAMPLE|plat_EXAMPLE|\*+$)/.test(s))).toEqual([]);
  });
});

describe('the example check', () => {
  it('reports an operation added without examples, and an example its schema refuses', () => {
    const doc: Doc = {
      paths: {
        '/api/v1/widgets': {
          post: {
            operationId: 'createWidget',
            requestBody: { content: { 'application/json': { schema: { type: 'object' } } } },
            responses: {
              '201': { content: { 'application/json': { schema: { type: 'object' } } } },
              '404': {
                content: {
                  'application/json': {
                    schema: { type: 'object' },
                    example: { success: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'x' } },
                  },
                },
              },
              '422': { content: { 'application/json': { schema: { type: 'object' }, example: 'text' } } },
            },
          },
        },
      },
    };
    expect(exampleProblems(doc)).toEqual([
      'createWidget request application/json: no example',
      'createWidget 201 application/json: no example',
      'createWidget 404: RATE_LIMIT_EXCEEDED is not a catalogued code of status 404',
      'createWidget 422 application/json: example must be object',
    ]);
  });
});
