import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { INTERFACE_ROUTES, pathShape } from './interface-routes.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** Error codes that mean "this route exists, the made-up id does not". */
const NOT_FOUND_KINDS = /^[A-Z_]*NOT_FOUND$/;

describe('the interface routes', () => {
  let t: TestPlatform;
  let documented: Map<string, string>;

  beforeAll(async () => {
    t = await startPlatform();
    const doc = (await t.request('GET', '/openapi.json')).data as {
      paths: Record<string, Record<string, unknown>>;
    };
    documented = new Map();
    for (const [path, item] of Object.entries(doc.paths))
      for (const method of Object.keys(item))
        documented.set(`${method.toUpperCase()} ${pathShape(path)}`, `${method.toUpperCase()} ${path}`);
  });
  afterAll(async () => {
    await t.close();
  });

  it('documents every method and path of the interface in /openapi.json', () => {
    const missing = INTERFACE_ROUTES.filter((r) => !documented.has(`${r.method} ${pathShape(r.path)}`)).map(
      (r) => `${r.method} ${r.path} (${r.source})`,
    );
    expect(missing).toEqual([]);
  });

  it('answers every route of the interface as an admin, with no 404 or 405 for the route itself', async () => {
    const token = await t.adminToken();
    const problems: string[] = [];
    for (const r of INTERFACE_ROUTES) {
      // The stream keeps its connection open: it is proven by test/streams with real sockets. Here only an
      // unknown resume point is asked for, which the route refuses before the stream starts.
      const url =
        r.path === '/api/v1/events/stream'
          ? `${r.path}?last_event_id=evt_contract_unknown`
          : r.path.replace(/\{[^}]+\}/g, 'contract-made-up-id');
      // Every route gets an empty JSON object where a body may be taken: a route that needs fields answers
      // 422, which still proves that it exists.
      const body = r.method === 'GET' || r.method === 'DELETE' ? undefined : {};
      const res = await t.request(r.method, url, { token, ...(body === undefined ? {} : { body }) });
      if (res.statusCode === 405) problems.push(`${r.method} ${r.path}: 405`);
      if (res.statusCode === 404) {
        const code = res.data?.error?.code as string | undefined;
        const templated = url !== r.path;
        if (!templated || !code || !NOT_FOUND_KINDS.test(code))
          problems.push(`${r.method} ${r.path}: 404 ${code ?? ''}`);
        else if (!documented.has(`${r.method} ${pathShape(r.path)}`))
          problems.push(`${r.method} ${r.path}: 404 ${code} and the route is not in the document`);
      }
      if (res.statusCode >= 500) problems.push(`${r.method} ${r.path}: ${res.statusCode}`);
    }
    expect(problems).toEqual([]);
  });
});
