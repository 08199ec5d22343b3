import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { insideOneWindow } from '../helpers/fixed-window.js';
import { RawSse, until, WsClient } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { Cluster, type Instance } from './cluster-instances.js';
import { PROBE_PLUGIN, probePluginRepository } from './probe-plugin.js';

/**
 * Three real platform processes on one PostgreSQL database and Redis prefix (decisions §7): whatever is done
 * through one instance is checked through the others.
 */
describe('a cluster of three instances', { timeout: 30_000 }, () => {
  let cluster: Cluster;
  let a: Instance;
  let b: Instance;
  let c: Instance;
  let all: Instance[];
  let receiver: Receiver;
  let plugins: string;
  const open: { close(): void }[] = [];
  /** The admin's token on each instance (each logged in there). */
  const admin = new Map<Instance, string>();

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    plugins = probePluginRepository();
    cluster = await Cluster.start(3, {
      PLATFORM__RATE_LIMITS__ANONYMOUS__MAX: '6',
      PLATFORM__WEBHOOKS__POLL_INTERVAL_MS: '50',
      PLATFORM__PLUGINS__REPOSITORIES: plugins,
      // The metrics sampler clears cached responses on every sample; the cache check wants only its own clears.
      PLATFORM__METRICS__SAMPLE_INTERVAL_SECONDS: '3600',
    });
    [a, b, c] = cluster.instances as [Instance, Instance, Instance];
    all = [a, b, c];
    for (const i of all) admin.set(i, await i.adminToken());
  }, 90_000);
  afterAll(async () => {
    for (const s of open) s.close();
    await cluster?.close();
    await receiver?.close();
    rmSync(plugins, { recursive: true, force: true });
  });

  const emit = (on: Instance, eventType: string, data: Record<string, unknown> = {}) =>
    on.api('POST', '/api/v1/events', { token: admin.get(on)!, body: { event_type: eventType, data } });

  it('delivers an event emitted on A to SSE and WebSocket clients of B and C', async () => {
    const clients = [b, c].map((i) => {
      const sse = new RawSse(`${i.base}/api/v1/events/stream?patterns=fanout.*`, {
        authorization: `Bearer ${admin.get(i)}`,
      });
      const ws = new WsClient(`${i.base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${admin.get(i)}`);
      open.push(sse, ws);
      return { sse, ws };
    });
    for (const { sse, ws } of clients) {
      await Promise.all([sse.ready, ws.opened]);
      ws.send({ action: 'subscribe', patterns: ['fanout.*'] });
      await until(() => ws.of('subscribed').length === 1, 5000, 'the WebSocket subscription');
    }
    const res = await emit(a, 'fanout.check', { from: 'A' });
    expect(res.status).toBe(201);
    const id = res.data.data.event.event_id;
    for (const { sse, ws } of clients) {
      await until(() => sse.events().length === 1 && ws.of('event').length === 1, 5000, 'fan-out to B and C');
      expect(sse.events()[0]!.id).toBe(id);
      expect(ws.of('event')[0].event).toMatchObject({ event_id: id, data: { from: 'A' } });
    }
  });

  it("counts the live clients of every instance in an event's subscriber_count", async () => {
    const sseOn = (i: Instance) => {
      const sse = new RawSse(`${i.base}/api/v1/events/stream?patterns=audience.*`, {
        authorization: `Bearer ${admin.get(i)}`,
      });
      open.push(sse);
      return sse;
    };
    const ws = new WsClient(`${b.base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${admin.get(b)}`);
    open.push(ws);
    const onA = sseOn(a);
    const onC = sseOn(c);
    await Promise.all([onA.ready, onC.ready, ws.opened]);
    ws.send({ action: 'subscribe', patterns: ['audience.**'] });
    await until(() => ws.of('subscribed').length === 1, 5000, 'the WebSocket subscription');
    const countOn = async (i: Instance) => (await emit(i, 'audience.count')).data.data.event.subscriber_count;
    // One client on each instance, whichever instance emits (no durable subscription matches).
    for (const i of all) expect(await eventually(async () => (await countOn(i)) === 3, 5000)).toBe(true);
    onC.close();
    expect(await eventually(async () => (await countOn(a)) === 2, 5000)).toBe(true);
    ws.send({ action: 'unsubscribe', patterns: ['audience.**'] });
    expect(await eventually(async () => (await countOn(a)) === 1, 5000)).toBe(true);
    expect(await countOn(b)).toBe(1);
  });

  it('numbers events gap-free in commit order while all three emit at once, and streams them in that order', async () => {
    const sse = new RawSse(`${c.base}/api/v1/events/stream?patterns=order.*`, {
      authorization: `Bearer ${admin.get(c)}`,
    });
    open.push(sse);
    await sse.ready;
    const results = await Promise.all(
      Array.from({ length: 150 }, (_, n) => emit(all[n % 3]!, 'order.write', { n })),
    );
    for (const r of results) expect(r.status).toBe(201);
    const acknowledged = new Set(results.map((r) => r.data.data.event.event_id as string));
    await until(() => sse.events().length >= 150, 10_000, '150 streamed events');
    const streamed = sse.payloads();
    expect(new Set(streamed.map((p) => p.event_id))).toEqual(acknowledged);
    // Between the first and the last of them, every number is taken by exactly one event (some by platform
    // events of other types): read back the whole range and compare.
    const seqs = streamed.map((p) => p.sequence as number);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    const first = seqs[0]!;
    const last = seqs.at(-1)!;
    const stored: number[] = [];
    for (let page = 1; stored.length < last - first + 1 && page < 20; page++) {
      const res = await b.api('GET', `/api/v1/events?sort=timestamp&order=asc&per_page=100&page=${page}`, {
        token: admin.get(b)!,
      });
      expect(res.status).toBe(200);
      if (res.data.data.events.length === 0) break;
      for (const e of res.data.data.events) stored.push(e.sequence);
    }
    const inRange = stored.filter((s) => s >= first && s <= last).sort((x, y) => x - y);
    expect(inRange).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
  });

  it('makes each webhook delivery exactly once while all three instances claim from the outbox', async () => {
    const sub = await a.api('POST', '/api/v1/events/subscriptions', {
      token: admin.get(a)!,
      body: {
        name: 'once',
        event_patterns: ['once.*', 'probe.*'],
        webhook_config: { url: `${receiver.url}/once` },
      },
    });
    expect(sub.status).toBe(201);
    // Each instance learns of the new subscription through Redis; its emits count it once it has.
    for (const i of all) {
      const seen = await eventually(
        async () => (await emit(i, 'probe.sync')).data.data.event.subscriber_count === 1,
        10_000,
      );
      expect(seen, `${i.name} sees the subscription`).toBe(true);
    }
    const results = await Promise.all(
      Array.from({ length: 90 }, (_, n) => emit(all[n % 3]!, 'once.event', { n })),
    );
    const ids = results.map((r) => r.data.data.event.event_id as string);
    const deliveries = () => receiver.requests.filter((r) => r.json?.event_type === 'once.event');
    await until(() => deliveries().length >= 90, 20_000, '90 deliveries');
    // A duplicate, if there were one, would come right behind.
    await new Promise((r) => setTimeout(r, 300));
    const received = deliveries().map((r) => r.json.event_id as string);
    expect(received.length).toBe(90);
    expect(new Set(received)).toEqual(new Set(ids));
    const byDeliveryId = new Set(deliveries().map((r) => String(r.headers['x-platform-delivery-id'])));
    expect(byDeliveryId.size).toBe(90);
  });

  it('shares rate-limit counters: the anonymous limit of 6 is spent across all three instances', async () => {
    const headers = { 'x-forwarded-for': '198.51.100.61' };
    // The anonymous bucket's window is an hour of the clock: not one that ends while the limit is spent.
    await insideOneWindow(3600, 15_000);
    const remaining: string[] = [];
    // Anonymous requests to a protected route: refused (401), but counted first.
    for (let n = 0; n < 6; n++) {
      const res = await all[n % 3]!.api('GET', '/api/v1/status', { headers });
      expect(res.status).toBe(401);
      remaining.push(res.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['5', '4', '3', '2', '1', '0']);
    for (const i of all) {
      const over = await i.api('GET', '/api/v1/status', { headers });
      expect(over.status).toBe(429);
      expect(over.data.error.code).toBe('RATE_LIMIT_EXCEEDED');
    }
  });

  it('revokes a session on B and C at once when it is logged out on A', async () => {
    const created = await a.api('POST', '/api/v1/admin/users', {
      token: admin.get(a)!,
      body: {
        username: 'leaver',
        email: 'leaver@example.test',
        password: 'user-password-1',
        roles: ['user'],
      },
    });
    expect(created.status).toBe(201);
    const token = await a.login('leaver', 'user-password-1');
    // B and C have verified (and cached) the token before it is revoked.
    for (const i of [b, c]) expect((await i.api('GET', '/api/v1/auth/me', { token })).status).toBe(200);
    expect((await a.api('POST', '/api/v1/auth/logout', { token, body: {} })).status).toBe(200);
    for (const i of [b, c]) {
      const res = await i.api('GET', '/api/v1/auth/me', { token });
      expect(res.status, `${i.name} after the logout`).toBe(401);
    }
  });

  it('turns maintenance on and off for every instance from one', async () => {
    const created = await a.api('POST', '/api/v1/admin/users', {
      token: admin.get(a)!,
      body: {
        username: 'worker',
        email: 'worker@example.test',
        password: 'user-password-1',
        roles: ['user'],
      },
    });
    expect(created.status).toBe(201);
    const user = await a.login('worker', 'user-password-1');
    const on = await a.api('POST', '/api/v1/admin/system/maintenance', {
      token: admin.get(a)!,
      body: { enabled: true, message: 'cluster-wide' },
    });
    expect(on.status).toBe(200);
    try {
      for (const i of all) {
        const refused = await eventually(
          async () => (await i.api('GET', '/api/v1/auth/me', { token: user })).status === 423,
          5000,
        );
        expect(refused, `${i.name} in maintenance`).toBe(true);
      }
    } finally {
      const off = await b.api('POST', '/api/v1/admin/system/maintenance', {
        token: admin.get(b)!,
        body: { enabled: false },
      });
      expect(off.status).toBe(200);
    }
    for (const i of all) {
      const served = await eventually(
        async () => (await i.api('GET', '/api/v1/auth/me', { token: user })).status === 200,
        5000,
      );
      expect(served, `${i.name} out of maintenance`).toBe(true);
    }
  });

  it('applies a configuration change made on A on B and C', async () => {
    const big = { blob: 'x'.repeat(3000) };
    expect((await emit(c, 'config.before', big)).status).toBe(201);
    const put = await a.api('PUT', '/api/v1/config', {
      token: admin.get(a)!,
      body: { events: { max_payload_bytes: 2048 } },
    });
    expect(put.status).toBe(200);
    try {
      for (const i of [b, c]) {
        const refused = await eventually(
          async () => (await emit(i, 'config.after', big)).status === 413,
          5000,
        );
        expect(refused, `${i.name} applies the new limit`).toBe(true);
        const res = await emit(i, 'config.after', big);
        expect(res.data.error.code).toBe('EVENT_TOO_LARGE');
        const shown = await i.api('GET', '/api/v1/config?section=events', { token: admin.get(i)! });
        expect(shown.data.data.events.max_payload_bytes).toBe(2048);
      }
    } finally {
      await a.api('PUT', '/api/v1/config', {
        token: admin.get(a)!,
        body: { events: { max_payload_bytes: 262_144 } },
      });
    }
  });

  it('clears cached entries on every instance when the cache is cleared on one', async () => {
    const l1Entries = async (i: Instance) => {
      const res = await i.api('GET', '/api/v1/cache/status', { token: admin.get(i)! });
      expect(res.status).toBe(200);
      return res.data.data.cache_levels.find((l: { level: string }) => l.level === 'L1').entries as number;
    };
    // Each instance caches the metrics series it answers with (namespace api_responses).
    const before = new Map<Instance, number>();
    for (const i of [b, c]) {
      expect((await i.api('GET', '/api/v1/metrics', { token: admin.get(i)! })).status).toBe(200);
      before.set(i, await l1Entries(i));
      expect(before.get(i)).toBeGreaterThan(0);
    }
    const cleared = await a.api('DELETE', '/api/v1/cache', {
      token: admin.get(a)!,
      body: { pattern: 'api_responses:*' },
    });
    expect(cleared.status).toBe(200);
    for (const i of [b, c]) {
      const dropped = await eventually(async () => (await l1Entries(i)) < before.get(i)!, 5000);
      expect(dropped, `${i.name} dropped its cached responses`).toBe(true);
    }
  });

  it('loads a plugin installed through A on B and C', async () => {
    const installed = await a.api('POST', '/api/v1/admin/plugins/install', {
      token: admin.get(a)!,
      body: { source: 'repository', plugin_name: PROBE_PLUGIN, version: 'latest', config: { enabled: true } },
    });
    expect(installed.status, JSON.stringify(installed.data)).toBeLessThan(300);
    const pids = new Set<number>();
    for (const i of all) {
      const served = await eventually(async () => {
        const res = await i.api('GET', `/api/v1/ext/${PROBE_PLUGIN}/ping`);
        if (res.status === 200) pids.add(res.data.data.pid);
        return res.status === 200;
      }, 10_000);
      expect(served, `${i.name} serves the plugin's route`).toBe(true);
    }
    expect(pids.size).toBe(3);
  });

  it('disables, enables and uninstalls the plugin on every instance from any one', async () => {
    // With the admin's token: anonymous calls are limited to 6 across the cluster here.
    const ping = async (i: Instance) =>
      (await i.api('GET', `/api/v1/ext/${PROBE_PLUGIN}/ping`, { token: admin.get(i)! })).status;
    const everywhere = async (status: number) => {
      for (const i of all) {
        const seen = await eventually(async () => (await ping(i)) === status, 10_000);
        expect(seen, `${i.name} answers ${status}`).toBe(true);
      }
    };
    const state = async (i: Instance) =>
      (await i.api('GET', `/api/v1/admin/plugins/${PROBE_PLUGIN}`, { token: admin.get(i)! })).data.data
        .plugin;

    const off = await b.api('POST', `/api/v1/admin/plugins/${PROBE_PLUGIN}/disable`, {
      token: admin.get(b)!,
    });
    expect(off.status, JSON.stringify(off.data)).toBe(200);
    await everywhere(404);
    for (const i of all) expect(await state(i)).toMatchObject({ status: 'disabled', enabled: false });

    const on = await c.api('POST', `/api/v1/admin/plugins/${PROBE_PLUGIN}/enable`, { token: admin.get(c)! });
    expect(on.status, JSON.stringify(on.data)).toBe(200);
    await everywhere(200);
    for (const i of all)
      expect(await state(i)).toMatchObject({ status: 'active', enabled: true, health: 'healthy' });

    const removed = await b.api('DELETE', `/api/v1/admin/plugins/${PROBE_PLUGIN}`, { token: admin.get(b)! });
    expect(removed.status, JSON.stringify(removed.data)).toBe(200);
    await everywhere(404);
    for (const i of all) {
      const list = await i.api('GET', '/api/v1/admin/plugins', { token: admin.get(i)! });
      expect(list.data.data.plugins).toEqual([]);
    }
  });

  it('refuses an address blocked through A on B and C', async () => {
    const from = { 'x-forwarded-for': '203.0.113.50' };
    for (const i of all) expect((await i.api('GET', '/api/v1/health', { headers: from })).status).toBe(200);
    const blocked = await a.api('POST', '/api/v1/admin/security/block-ip', {
      token: admin.get(a)!,
      body: { ip_address: '203.0.113.50', reason: 'cluster check', duration_hours: 0 },
    });
    expect(blocked.status).toBe(201);
    for (const i of all) {
      const refused = await eventually(
        async () => (await i.api('GET', '/api/v1/health', { headers: from })).status === 403,
        5000,
      );
      expect(refused, `${i.name} refuses the blocked address`).toBe(true);
      const res = await i.api('GET', '/api/v1/health', { headers: from });
      expect(res.data.error.details.reason).toBe('ip_blocked');
    }
  });

  it('runs only one backup at a time across the instances (409 BACKUP_IN_PROGRESS for the others)', async () => {
    const results = await Promise.all(
      all.map((i) => i.api('POST', '/api/v1/backup', { token: admin.get(i)!, body: {}, timeoutMs: 30_000 })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409]);
    for (const r of results.filter((x) => x.status === 409))
      expect(r.data.error.code).toBe('BACKUP_IN_PROGRESS');
    const id = results.find((r) => r.status === 201)!.data.data.backup_id;
    for (const i of all) {
      const list = await i.api('GET', '/api/v1/backup', { token: admin.get(i)! });
      expect(list.data.data.backups.some((x: { id: string }) => x.id === id)).toBe(true);
    }
  });
});
