import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDirect, openBenchDatabase } from '../../bench/direct-loader.js';
import { benchEventBody } from '../../bench/scale-events.js';
import {
  ADMIN_PASSWORD,
  provisionStorage,
  startPlatform,
  type TestPlatform,
} from '../helpers/test-platform.js';

const N = 2_000;

/** What differs between two loads of the same bodies by nature: ids, clocks, request facts, processing times. */
const VARYING =
  /(^|_)(id|ids|timestamp|time|ms|at|metadata|correlation_id|processing|avg|average|rate|uptime|checked|check|mb|minute)($|_)/;
function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(comparable);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([k]) => !VARYING.test(k))
      .map(([k, v]) => [k, comparable(v)]),
  );
}

/** bench:scale's --loader direct writes what N emits through POST /api/v1/events write, as a user reads it. */
describe('bench:scale direct loader', () => {
  let api: TestPlatform;
  let direct: TestPlatform;
  let cleanup: () => Promise<void> = async () => {};
  // One login each after the loads (a login is an event, `auth.login`).
  const tokens = new Map<TestPlatform, string>();

  beforeAll(async () => {
    api = await startPlatform();
    const token = await api.adminToken();
    // One at a time, so that the sequence numbers follow the bodies as the loader's do.
    for (let i = 0; i < N; i++) {
      const res = await api.request('POST', '/api/v1/events', { token, body: benchEventBody(i) });
      expect(res.statusCode).toBe(201);
    }
    const storage = await provisionStorage();
    cleanup = storage.cleanup;
    // The first start migrates and creates the admin; the events are written while no server runs.
    // Its login is the first event, as the first API emit's login is on the other side.
    const first = await startPlatform({}, { storage: storage.tree });
    await first.adminToken();
    await first.close();
    const tree = storage.tree as { storage: { data_dir: string }; database?: { url: string } };
    const database = openBenchDatabase(tree.database?.url ?? join(tree.storage.data_dir, 'platform.db'));
    await loadDirect(database, 0, N);
    await database.close();
    direct = await startPlatform({}, { storage: storage.tree });
    tokens.set(api, (await api.login('admin', ADMIN_PASSWORD)).access);
    tokens.set(direct, (await direct.login('admin', ADMIN_PASSWORD)).access);
  }, 60_000);

  afterAll(async () => {
    await api?.close();
    await direct?.close();
    await cleanup();
  });

  const read = async (platform: TestPlatform, path: string) => {
    const res = await platform.request('GET', path, { token: tokens.get(platform)! });
    expect(res.statusCode).toBe(200);
    return comparable(res.data.data);
  };

  it('answers the same event pages, stats, health and counts per type', async () => {
    const paths = [
      '/api/v1/events?per_page=100',
      '/api/v1/events?per_page=100&page=7',
      '/api/v1/events?event_type=shop5.**&per_page=50',
      '/api/v1/events?source=service-3&priority=4&per_page=50',
      ...['event_type', 'source', 'hour', 'day'].map((g) => `/api/v1/events/stats?group_by=${g}`),
      '/api/v1/events/health',
      ...['shop0.order', 'shop3.payment', 'shop9.ship'].map(
        (t) => `/api/v1/events?event_type=${t}&per_page=1`,
      ),
    ];
    for (const path of paths) {
      expect(await read(direct, path), path).toEqual(await read(api, path));
    }
  });
});
