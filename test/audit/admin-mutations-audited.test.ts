import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { EXCLUDED, SAMPLES } from './admin-mutation-samples.js';

const MUTATIONS = ['post', 'put', 'patch', 'delete'];
/** Routes that disturb the others run last. */
const LAST = ['POST /api/v1/admin/system/restart'];

describe('audit of every admin mutation', () => {
  let t: TestPlatform;
  let admin: string;
  let routes: string[];
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    const doc = (await t.request('GET', '/openapi.json')).data as {
      paths: Record<string, Record<string, unknown>>;
    };
    routes = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api/v1/admin/'))
      .flatMap(([path, ops]) =>
        Object.keys(ops)
          .filter((m) => MUTATIONS.includes(m))
          .map((m) => `${m.toUpperCase()} ${path}`),
      )
      .sort((a, b) => Number(LAST.includes(a)) - Number(LAST.includes(b)));
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const auditTotal = async (): Promise<number> =>
    (await t.request('GET', '/api/v1/admin/audit-log?per_page=1', { token: admin })).data.data.pagination
      .total;

  it('finds the admin mutation routes in the OpenAPI document', () => {
    expect(routes).toEqual(
      expect.arrayContaining([
        'POST /api/v1/admin/users',
        'POST /api/v1/admin/users/{user_id}/suspend',
        'PATCH /api/v1/admin/security/alerts/{alert_id}',
      ]),
    );
  });

  it('has a valid sample call for every admin mutation route', () => {
    const missing = routes.filter((r) => !SAMPLES[r] && !EXCLUDED[r]);
    expect(missing, 'add a sample to test/audit/admin-mutation-samples.ts').toEqual([]);
  });

  it('leaves exactly one new audit entry for each successful admin mutation', async () => {
    const problems: string[] = [];
    let walked = 0;
    for (const route of routes) {
      const sample = SAMPLES[route];
      if (!sample) continue;
      const [method, path] = route.split(' ') as [string, string];
      const call = await sample(t, admin);
      const before = await auditTotal();
      const res = await t.request(method, call.url, {
        token: admin,
        ...(call.body === undefined ? {} : { body: call.body }),
      });
      if (res.statusCode >= 300) {
        problems.push(
          `${method} ${path}: the sample call answered ${res.statusCode} ${res.body.slice(0, 300)}`,
        );
        continue;
      }
      walked += 1;
      // Most entries are written before the response; a backup's when its archive is written, by its task.
      // Wait for the first, then a short settle catches a second, late one.
      const deadline = Date.now() + 10_000;
      while ((await auditTotal()) === before && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 100));
      const added = (await auditTotal()) - before;
      if (added !== 1) problems.push(`${method} ${path}: ${added} new audit entries (expected 1)`);
    }
    expect(problems).toEqual([]);
    expect(walked).toBeGreaterThanOrEqual(10);
  }, 60_000);
});
