import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { errorCodes } from '../../src/http/error-catalogue.js';
import { ResponseContractError } from '../helpers/response-validator.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { snapshotData } from './data-snapshot.js';
import {
  bodyRequests,
  type FuzzOperation,
  type FuzzRequest,
  nastyPathValue,
  queryRequests,
} from './fuzz-inputs.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 60_000 });

/**
 * Property-based fuzzing driven by the OpenAPI document: every operation gets bounded batches of hostile
 * input (wrong types, missing and extra fields, huge strings, unicode, edge numbers, `__proto__` keys, wrong
 * content types, broken JSON) as an admin and as a plain user. Fixed seeds keep it reproducible; `npm run
 * fuzz` raises the number of runs (PLATFORM_FUZZ_RUNS).
 */
const RUNS = Number(process.env['PLATFORM_FUZZ_RUNS'] ?? 6);
const SEED = Number(process.env['PLATFORM_FUZZ_SEED'] ?? 20_261_121);
const CODES = new Set<string>(errorCodes);
// A stream answers a valid request with an endless body; test/streams proves it with real sockets.
const SKIPPED = new Set(['GET /api/v1/events/stream']);

interface Doc {
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components?: unknown;
}

describe('fuzzing every operation of the document', () => {
  let t: TestPlatform;
  let doc: Doc;
  let operations: FuzzOperation[];
  const principals: { name: string; token: string }[] = [];
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startPlatform();
    doc = (await t.request('GET', '/openapi.json')).data as Doc;
    operations = [];
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item)) {
        if (SKIPPED.has(`${method.toUpperCase()} ${path}`)) continue;
        const requestBody = op['requestBody'] as
          | { required?: boolean; content?: Record<string, { schema?: object }> }
          | undefined;
        const content = requestBody?.content;
        operations.push({
          method: method.toUpperCase(),
          path,
          bodyOptional: requestBody?.required === false,
          parameters: (op['parameters'] as FuzzOperation['parameters'] | undefined) ?? [],
          ...(content?.['application/json']?.schema
            ? { body: content['application/json'].schema as Record<string, unknown> }
            : {}),
        });
      }
    const admin = await t.adminToken();
    const user = await t.createUser('fuzz-user');
    principals.push({ name: 'admin', token: admin }, { name: 'user', token: user.access });
    // Real ids, so refused bodies are aimed at resources that exist.
    ids['user_id'] = user.id;
    const sub = await t.request('POST', '/api/v1/events/subscriptions', {
      token: admin,
      body: {
        name: 'fuzz target',
        event_patterns: ['fuzz.*'],
        delivery_method: 'webhook',
        webhook_config: { url: 'http://127.0.0.1:9/hook' },
      },
    });
    if (sub.statusCode === 201) ids['subscription_id'] = sub.data.data.subscription.subscription_id;
  });
  afterAll(async () => {
    await t?.close();
  });

  const urlFor = (op: FuzzOperation) =>
    op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => ids[name] ?? 'fuzz-made-up-id');

  /** Sends one request; returns what is wrong with the answer, or undefined. */
  async function send(
    req: FuzzRequest,
    method: string,
    token: string,
    mustRefuse: boolean,
  ): Promise<string | undefined> {
    const what = `${method} ${req.url.slice(0, 200)} [${req.label}]`;
    try {
      const res = await t.request(method, req.url, {
        token,
        ...(req.body === undefined ? {} : { body: req.body }),
        headers: req.contentType ? { 'content-type': req.contentType } : {},
      });
      if (res.statusCode >= 500) return `${what}: ${res.statusCode} ${res.body.slice(0, 300)}`;
      if (res.statusCode >= 400) {
        const code = res.data?.error?.code as string | undefined;
        if (res.data?.success !== false || !code || !CODES.has(code))
          return `${what}: ${res.statusCode} without a catalogued error code: ${res.body.slice(0, 300)}`;
      } else if (mustRefuse) {
        return `${what}: accepted an invalid request with ${res.statusCode}`;
      }
      return undefined;
    } catch (err) {
      if (err instanceof ResponseContractError) return `${what}: ${err.message}`;
      throw err;
    }
  }

  async function runProperty(
    arb: fc.Arbitrary<FuzzRequest>,
    method: string,
    token: string,
    mustRefuse: boolean,
    seed: number,
  ): Promise<string | undefined> {
    let found: string | undefined;
    try {
      await fc.assert(
        fc.asyncProperty(arb, async (req) => {
          const problem = await send(req, method, token, mustRefuse);
          found ??= problem;
          return problem === undefined;
        }),
        { seed, numRuns: RUNS, endOnFailure: true },
      );
    } catch {
      return found ?? 'property failed';
    }
    return undefined;
  }

  it('answers hostile query strings and path ids of every GET without a 5xx, in catalogued envelopes', async () => {
    const problems: string[] = [];
    let seed = SEED;
    for (const op of operations.filter((o) => o.method === 'GET'))
      for (const p of principals) {
        const url = urlFor(op);
        const arbs: fc.Arbitrary<FuzzRequest>[] = [queryRequests(op, url)];
        if (op.path.includes('{'))
          arbs.push(
            nastyPathValue.map((v) => ({
              url: op.path.replace(/\{[^}]+\}/g, v),
              label: `path id ${v.slice(0, 40)}`,
            })),
          );
        for (const arb of arbs) {
          const problem = await runProperty(arb, op.method, p.token, false, seed++);
          if (problem) problems.push(`as ${p.name}: ${problem}`);
        }
      }
    expect(problems).toEqual([]);
  });

  it('refuses every invalid body and hostile id of every mutation, in catalogued envelopes, changing no data', async () => {
    const before = await snapshotData(t.platform);
    const problems: string[] = [];
    let seed = SEED + 100_000;
    const mutations = operations.filter((o) => o.method !== 'GET' && o.method !== 'HEAD');
    for (const op of mutations)
      for (const p of principals) {
        const url = urlFor(op);
        const arbs: fc.Arbitrary<FuzzRequest>[] = [];
        // An operation without a body schema ignores a body, so any body is a valid request: it only gets
        // hostile path ids (below).
        if (op.body) arbs.push(bodyRequests(op, url, doc.components));
        if (op.path.includes('{') && op.method === 'DELETE')
          arbs.push(
            nastyPathValue.map((v) => ({
              url: op.path.replace(/\{[^}]+\}/g, v),
              label: `path id ${v.slice(0, 40)}`,
            })),
          );
        for (const arb of arbs) {
          const problem = await runProperty(arb, op.method, p.token, true, seed++);
          if (problem) problems.push(`as ${p.name}: ${problem}`);
        }
      }
    expect(problems).toEqual([]);
    expect(await snapshotData(t.platform)).toEqual(before);
  });
});
