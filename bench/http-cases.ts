/**
 * Request throughput of the platform against a bare Fastify route, and what authentication adds to a request:
 *
 * - `GET /api/v1/status` and `GET /api/v1/events?per_page=20` with a bearer token, against the bare server
 *   answering the very bodies the platform answered;
 * - `GET /api/v1/health` (public, but credentials sent to it are still verified by the request gates) without
 *   credentials, with a bearer token and with an API key: the difference of the time per request is the
 *   cost of the authentication.
 *
 * The platform and the bare server run in processes of their own, both up during the comparisons and loaded
 * one at a time, in turns; the load comes from this one.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpLoadInTurns, type LoadResult } from './http-load.js';
import { spawnJsonChild } from './json-child.js';
import {
  adminApiKey,
  adminToken,
  type PlatformRuntime,
  startPlatformProcess,
  stopChild,
} from './platform-process.js';
import { type ResultRow, row } from './result-row.js';

export interface HttpCaseOptions {
  runtime: PlatformRuntime;
  duration: number;
  connections: number;
  log: (line: string) => void;
}

const SEEDED_EVENTS = 100;
const LIST_PATH = '/api/v1/events';
const LIST_QUERY = '?per_page=20';

export async function runHttpCases(options: HttpCaseOptions): Promise<ResultRow[]> {
  const { duration, connections, log } = options;
  // Each comparison runs its targets in turns (bench/http-load.ts), both servers up at once, one loaded at a
  // time: a slow spell of the host then weighs on the platform and its baseline alike.
  const inTurns = async (
    name: string,
    targets: Array<{ url: string; headers?: Record<string, string>; pid?: number | undefined }>,
  ): Promise<LoadResult[]> => {
    log(`  ${name}`);
    const results = await httpLoadInTurns(targets, { connections, duration });
    for (const [i, r] of results.entries()) {
      if (r.non2xx > 0 || r.errors > 0)
        throw new Error(`${name} (${targets[i]!.url}): ${r.non2xx} non-2xx answers and ${r.errors} errors`);
    }
    return results;
  };

  const platform = await startPlatformProcess({ runtime: options.runtime });
  let bare: Awaited<ReturnType<typeof spawnJsonChild<{ url: string }>>> | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'platform-bench-bodies-'));
  let measured: Record<'status' | 'list' | 'public' | 'jwt' | 'apiKey', LoadResult>;
  let bareStatus: LoadResult;
  let bareList: LoadResult;
  try {
    const token = await adminToken(platform.url);
    const apiKey = await adminApiKey(platform.url, token);
    const bearer = { authorization: `Bearer ${token}` };
    await seedEvents(platform.url, bearer);
    const bodies: Record<string, unknown> = {};
    for (const path of ['/api/v1/status', LIST_PATH]) {
      const res = await fetch(`${platform.url}${path}${path === LIST_PATH ? LIST_QUERY : ''}`, {
        headers: bearer,
      });
      if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}`);
      bodies[path] = await res.json();
    }
    const bodiesFile = join(dir, 'bodies.json');
    writeFileSync(bodiesFile, JSON.stringify(bodies));
    bare = await spawnJsonChild<{ url: string }>('bare-server.ts', [bodiesFile]);
    const bareUrl = bare.first.url;
    let status: LoadResult;
    let list: LoadResult;
    [status, bareStatus] = (await inTurns('GET /api/v1/status: platform and bare, in turns', [
      { url: `${platform.url}/api/v1/status`, headers: bearer, pid: platform.pid },
      { url: `${bareUrl}/api/v1/status`, pid: bare.child.pid },
    ])) as [LoadResult, LoadResult];
    [list, bareList] = (await inTurns(`GET ${LIST_PATH}${LIST_QUERY}: platform and bare, in turns`, [
      { url: `${platform.url}${LIST_PATH}${LIST_QUERY}`, headers: bearer, pid: platform.pid },
      { url: `${bareUrl}${LIST_PATH}${LIST_QUERY}`, pid: bare.child.pid },
    ])) as [LoadResult, LoadResult];
    const [pub, jwt, key] = (await inTurns(
      'platform GET /api/v1/health without credentials, with a bearer token, with an API key, in turns',
      [
        { url: `${platform.url}/api/v1/health`, pid: platform.pid },
        { url: `${platform.url}/api/v1/health`, headers: bearer, pid: platform.pid },
        { url: `${platform.url}/api/v1/health`, headers: { 'x-api-key': apiKey }, pid: platform.pid },
      ],
    )) as [LoadResult, LoadResult, LoadResult];
    measured = { status, list, public: pub, jwt, apiKey: key };
  } finally {
    await platform.stop();
    if (bare) await stopChild(bare.child);
    rmSync(dir, { recursive: true, force: true });
  }

  const perRequestUs = (r: LoadResult) => 1e6 / r.rps;
  const cpu = (r: LoadResult, bare?: LoadResult) =>
    `server CPU ${r.server_cpu_us ?? '–'} µs per request${bare ? ` (bare ${bare.server_cpu_us ?? '–'} µs)` : ''}`;
  const atLeast70 = (_: number, ratio: number | null) => ratio !== null && ratio >= 0.7;
  return [
    row({
      id: 'http.status',
      figure: 'GET /api/v1/status (bearer token)',
      value: measured.status.rps,
      unit: 'req/s',
      baseline: { label: 'bare Fastify, same body', value: bareStatus.rps },
      target: '≥ 70 % of bare',
      check: atLeast70,
      note: `${cpu(measured.status, bareStatus)}; p50/p99 ${measured.status.p50}/${measured.status.p99} ms (bare ${bareStatus.p50}/${bareStatus.p99} ms)`,
    }),
    row({
      id: 'http.list',
      figure: `GET ${LIST_PATH}${LIST_QUERY} (bearer token)`,
      value: measured.list.rps,
      unit: 'req/s',
      baseline: { label: 'bare Fastify, same body', value: bareList.rps },
      target: '≥ 70 % of bare',
      check: atLeast70,
      note: `${cpu(measured.list, bareList)}; p50/p99 ${measured.list.p50}/${measured.list.p99} ms (bare ${bareList.p50}/${bareList.p99} ms)`,
    }),
    row({
      id: 'auth.jwt_overhead_us',
      figure: 'JWT authentication, added time per request',
      value: perRequestUs(measured.jwt) - perRequestUs(measured.public),
      unit: 'µs',
      baseline: { label: 'whole public request', value: perRequestUs(measured.public) },
      target: null,
      note: `GET /api/v1/health at ${measured.jwt.rps} req/s with a bearer token, ${measured.public.rps} req/s without; ${cpu(measured.jwt)} with the token, ${measured.public.server_cpu_us ?? '–'} µs without`,
    }),
    row({
      id: 'auth.api_key_overhead_us',
      figure: 'API-key authentication, added time per request',
      value: perRequestUs(measured.apiKey) - perRequestUs(measured.public),
      unit: 'µs',
      baseline: { label: 'whole public request', value: perRequestUs(measured.public) },
      target: null,
      note: `GET /api/v1/health at ${measured.apiKey.rps} req/s with an API key, ${measured.public.rps} req/s without; ${cpu(measured.apiKey)} with the key`,
    }),
  ];
}

/** Stored events, so the list answers a full page of 20. */
async function seedEvents(url: string, headers: Record<string, string>): Promise<void> {
  for (let i = 0; i < SEEDED_EVENTS; i++) {
    const res = await fetch(`${url}/api/v1/events`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        event_type: 'bench.order.created',
        source: 'bench',
        data: { order_id: i, customer: `c-${i % 7}`, total: 99.5, items: [{ sku: 'A1', qty: 2 }] },
      }),
    });
    if (res.status !== 201) throw new Error(`seeding events: ${res.status} ${await res.text()}`);
  }
}
