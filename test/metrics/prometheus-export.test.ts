import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from '../webhooks/webhook-fixtures.js';

/** Sample lines of the exposition as `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    expect(match, `not a sample line: ${line}`).not.toBeNull();
    out.set(match![1]!, Number(match![2]));
  }
  return out;
}

describe('GET /metrics for Prometheus', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let key: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    const created = await t.request('POST', '/api/v1/auth/api-keys', {
      token: admin,
      body: { name: 'prometheus', scopes: ['read:metrics'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    key = created.data.data.key;
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const scrape = async () => {
    const res = await t.request('GET', '/metrics', { headers: { authorization: `Bearer ${key}` } });
    expect(res.statusCode, res.body).toBe(200);
    return res.body;
  };

  it('takes an API key as a Bearer credential, as Prometheus sends it', async () => {
    expect(
      (await t.request('GET', '/metrics', { headers: { authorization: 'Bearer plat_not-a-key' } }))
        .statusCode,
    ).toBe(401);
    expect(await scrape()).toMatch(/^# TYPE http_requests_total counter$/m);
  });

  it('exports what really happened: events written, deliveries by outcome and status class, attempt times and counts', async () => {
    const before = samples(await scrape());
    // The first attempt of every other event is answered 503 and retried once.
    const seen = new Set<number>();
    receiver.respond = (req) => {
      const i = req.json?.data?.i as number;
      const first = !seen.has(i);
      seen.add(i);
      return first && i % 2 === 1 ? { status: 503 } : { status: 204 };
    };
    await createSubscription(t, admin, {
      name: 'metered',
      event_patterns: ['meter.*'],
      webhook_config: { url: `${receiver.url}/m`, retry_policy: { max_attempts: 2 } },
    });
    for (let i = 0; i < 4; i++)
      await emit(t, admin, { event_type: 'meter.tick', source: 'test', data: { i } });
    // 4 deliveries, 6 attempts.
    await until(async () => {
      const s = samples(await scrape());
      return (
        (s.get('platform_webhook_deliveries_total{outcome="delivered"}') ?? 0) -
          (before.get('platform_webhook_deliveries_total{outcome="delivered"}') ?? 0) ===
        4
      );
    }, `four deliveries counted (received ${receiver.requests.length})`);
    const after = samples(await scrape());
    const grew = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    expect(grew('platform_events_written_total')).toBeGreaterThanOrEqual(4);
    expect(grew('platform_webhook_attempts_total')).toBe(receiver.requests.length);
    expect(grew('platform_webhook_attempts_by_status_total{status_class="2xx"}')).toBe(4);
    expect(grew('platform_webhook_attempts_by_status_total{status_class="5xx"}')).toBe(
      receiver.requests.length - 4,
    );
    expect(grew('platform_webhook_retries_scheduled_total')).toBe(receiver.requests.length - 4);
    expect(grew('platform_webhook_attempt_duration_seconds_count')).toBe(receiver.requests.length);
    expect(grew('platform_webhook_attempt_duration_seconds_bucket{le="+Inf"}')).toBe(
      receiver.requests.length,
    );
    expect(grew('platform_webhook_delivery_attempts_count{outcome="delivered"}')).toBe(4);
    expect(grew('platform_webhook_delivery_attempts_sum{outcome="delivered"}')).toBe(
      receiver.requests.length,
    );
    expect(after.get('platform_component_status{component="webhook_dispatcher",status="healthy"}')).toBe(1);
  });

  it('counts rate-limit refusals and refused logins, and names every family once with its type', async () => {
    const wrong = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'admin', password: 'wrong-password' },
    });
    expect(wrong.statusCode).toBe(401);
    await until(
      async () => (samples(await scrape()).get('platform_login_failures_total') ?? 0) >= 1,
      'the refused login counted',
    );
    await t.request('PUT', '/api/v1/config', { token: admin, body: { rate_limits: { auth: { max: 1 } } } });
    let refused = 0;
    for (let i = 0; i < 3; i++) {
      const res = await t.request('POST', '/api/v1/auth/login', {
        body: { username: 'admin', password: 'wrong-password' },
      });
      if (res.statusCode === 429) refused += 1;
    }
    expect(refused).toBeGreaterThan(0);
    await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { auth: { max: 100_000 } } },
    });
    const text = await scrape();
    const s = samples(text);
    expect(s.get('platform_rate_limit_refusals_total{bucket="auth"}')).toBe(refused);
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const);
    expect(new Set(types.map(([name]) => name)).size).toBe(types.length);
    for (const [name, type] of types) if (type === 'counter') expect(name).toMatch(/_total$/);
  });

  it('counts tasks by type as they start and end, and the last backup as soon as its record reads completed', async () => {
    const gauge = 'platform_backup_last_success_timestamp_seconds';
    const before = samples(await scrape());
    expect(before.get(gauge)).toBe(0);
    const res = await t.request('POST', '/api/v1/backup', { token: admin, body: {} });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.data.data.backup_id;
    // Scraped while the backup is written, as Prometheus does: the scrape right after the record reads
    // `completed` follows one made while it was still running.
    let record: { status: string; created_at: string } | undefined;
    await until(async () => {
      await scrape();
      const list = await t.request('GET', '/api/v1/backup', { token: admin });
      record = list.data.data.backups.find((b: { id: string }) => b.id === id);
      return record?.status === 'completed';
    }, 'the backup record');
    expect(samples(await scrape()).get(gauge)).toBe(Date.parse(record!.created_at) / 1000);
    // The task's counter has moved by the time its record reads completed: the scrape right after shows it.
    await until(async () => {
      const task = await t.request('GET', `/api/v1/tasks/${id}`, { token: admin });
      return task.data.data.status === 'completed';
    }, 'the backup task');
    const after = samples(await scrape());
    const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    expect(delta('platform_tasks_total{type="backup",status="started"}')).toBe(1);
    expect(delta('platform_tasks_total{type="backup",status="completed"}')).toBe(1);
    expect(delta('platform_tasks_total{type="backup",status="failed"}')).toBe(0);
    const last = after.get(gauge)!;
    expect(Math.abs(last - Date.now() / 1000)).toBeLessThan(60);
  });

  it('has every family the Grafana dashboard in docs/grafana queries', async () => {
    const dashboard = readFileSync(new URL('../../docs/grafana/platform.json', import.meta.url), 'utf8');
    const exprs = (JSON.parse(dashboard) as { panels: { targets: { expr: string }[] }[] }).panels.flatMap(
      (p) => p.targets.map((t) => t.expr),
    );
    const names = new Set(
      exprs.flatMap((e) => [...e.matchAll(/\b((?:platform|http|process)_[a-z_]+)/g)].map((m) => m[1]!)),
    );
    const exported = new Set([...(await scrape()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    expect(names.size).toBeGreaterThan(10);
    for (const name of names) expect(exported, name).toContain(name.replace(/_(bucket|sum|count)$/, ''));
  });
});
