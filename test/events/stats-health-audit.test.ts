import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('event statistics, health and audit trail', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let user: { id: string; access: string };
  let start: string;
  let firstId: string;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    user = await t.createUser('counter', ['user']);
    // The platform stores its own events (user.created, auth.login) after answering: wait until they are in,
    // so the range below holds this test's events only.
    let seen = -1;
    let unchanged = 0;
    await eventually(async () => {
      const res = await t.request('GET', '/api/v1/events?per_page=1', { token: admin });
      const total = res.data.data.pagination.total as number;
      unchanged = total === seen ? unchanged + 1 : 0;
      seen = total;
      return unchanged >= 3;
    }, 5000);
    start = new Date().toISOString();
    for (const [type, source] of [
      ['stat.a', 'one'],
      ['stat.a', 'one'],
      ['stat.a', 'two'],
      ['stat.b', 'two'],
    ] as const) {
      const res = await t.request('POST', '/api/v1/events', {
        token: user.access,
        body: { event_type: type, source },
      });
      firstId ??= res.data.data.event.event_id;
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it('computes stats from the stored events in the range', async () => {
    const end = new Date(Date.now() + 1000).toISOString();
    const res = await t.request(
      'GET',
      `/api/v1/events/stats?start_time=${encodeURIComponent(start)}&end_time=${encodeURIComponent(end)}&group_by=day`,
      { token: admin },
    );
    expect(res.statusCode).toBe(200);
    const s = res.data.data;
    expect(s.group_by).toBe('day');
    expect(s.summary).toMatchObject({ total_events: 4, unique_event_types: 2, active_subscriptions: 0 });
    expect(s.summary.events_per_minute).toBeGreaterThan(0);
    expect(s.summary.average_processing_time_ms).toBeGreaterThan(0);
    expect(s.by_event_type).toEqual([
      expect.objectContaining({ event_type: 'stat.a', count: 3, percentage: 75 }),
      expect.objectContaining({ event_type: 'stat.b', count: 1, percentage: 25 }),
    ]);
    expect(s.by_source).toEqual(
      [
        { source: 'two', count: 2, percentage: 50 },
        { source: 'one', count: 2, percentage: 50 },
      ].sort((x, y) => x.source.localeCompare(y.source)),
    );
    expect(s.timeline).toHaveLength(1);
    expect(s.timeline[0]).toMatchObject({ timestamp: `${start.slice(0, 10)}T00:00:00.000Z`, event_count: 4 });
  });

  it("counts a non-admin's own active subscriptions, an admin's every user's", async () => {
    const moderator = await t.createUser('stats-moderator', ['moderator']);
    const other = await t.createUser('stats-other', ['user']);
    const subscribe = async (token: string, url: string) => {
      const res = await t.request('POST', '/api/v1/events/subscriptions', {
        token,
        body: { event_patterns: ['nothing.counted'], webhook_config: { url } },
      });
      expect(res.statusCode, res.body).toBe(201);
    };
    const activeFor = async (token: string) => {
      const res = await t.request('GET', '/api/v1/events/stats', { token });
      expect(res.statusCode, res.body).toBe(200);
      return res.data.data.summary.active_subscriptions as number;
    };
    const before = await activeFor(admin);
    await subscribe(moderator.access, 'https://mod.example.test/hook');
    await subscribe(other.access, 'https://other.example.test/a');
    await subscribe(other.access, 'https://other.example.test/b');
    expect(await activeFor(moderator.access)).toBe(1);
    expect(await activeFor(admin)).toBe(before + 3);
  });

  it('needs read:metrics for stats', async () => {
    const res = await t.request('GET', '/api/v1/events/stats', { token: user.access });
    expect(res.statusCode).toBe(403);
    expect(res.data.error.code).toBe('AUTHORIZATION_DENIED');
  });

  it('reports measured health: outbox backlog, processing rate, connections and checks', async () => {
    await t.request('POST', '/api/v1/events/subscriptions', {
      token: user.access,
      body: { event_patterns: ['health.*'], webhook_config: { url: 'https://h.example.test/x' } },
    });
    for (let i = 0; i < 3; i++) {
      await t.request('POST', '/api/v1/events', { token: user.access, body: { event_type: 'health.ping' } });
    }
    const res = await t.request('GET', '/api/v1/events/health', { token: user.access });
    expect(res.statusCode).toBe(200);
    const h = res.data.data;
    expect(h.metrics.queue_size).toBe(3);
    expect(h.metrics.processing_rate).toBeGreaterThan(0);
    // The webhook dispatcher really tries the (unresolvable) target, so failed attempts may already count.
    expect(h.metrics.error_rate).toBeGreaterThanOrEqual(0);
    expect(h.metrics.error_rate).toBeLessThanOrEqual(1);
    expect(h.metrics.active_connections).toBe(0);
    expect(h.metrics.memory_usage_mb).toBeGreaterThan(0);
    expect(h.checks.map((c: any) => c.name)).toEqual(['outbox_backlog', 'delivery_errors', 'stream_hub']);
    expect(['healthy', 'warning']).toContain(h.status);
  });

  it('shows the event bus and store among the services with real figures', async () => {
    const status = await t.request('GET', '/api/v1/status', { token: admin });
    const components = status.data.data.components;
    expect(components.event_bus).toMatchObject({ status: 'healthy', queue_size: 0 });
    expect(components.event_bus.processed_events).toBeGreaterThanOrEqual(7);
    expect(components.event_store.last_sequence).toBeGreaterThanOrEqual(7);
    expect(components.stream_hub).toMatchObject({ status: 'healthy', active_connections: 0 });
  });

  it('gives admins the audit trail of an event; others get 403 ADMIN_REQUIRED', async () => {
    const res = await t.request('GET', `/api/v1/events/${firstId}/audit`, { token: admin });
    expect(res.statusCode).toBe(200);
    const event = await t.request('GET', `/api/v1/events/${firstId}`, { token: admin });
    expect(res.data.data.audit_trail).toEqual([
      {
        timestamp: event.data.data.event.timestamp,
        action: 'event_emitted',
        actor: 'counter',
        details: {
          source: 'one',
          priority: 5,
          security_level: 'internal',
          durable_subscribers: 0,
          live_subscribers: 0,
          request_id: event.data.data.event.metadata.request_id,
          sequence: event.data.data.event.sequence,
        },
      },
    ]);
    const denied = await t.request('GET', `/api/v1/events/${firstId}/audit`, { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('ADMIN_REQUIRED');
    const missing = await t.request('GET', '/api/v1/events/evt_none/audit', { token: admin });
    expect(missing.statusCode).toBe(404);
  });

  it('still shows the stored emit entry of an event written before the emit record moved onto the event row', async () => {
    // Events stored before migration 0011 have no emitted_by and an event_emitted row of their own.
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'stat.old' },
    });
    const id = res.data.data.event.event_id as string;
    const db = t.platform.context.database.db;
    await db
      .updateTable('events')
      .set({ emitted_by: null, durable_subscribers: null })
      .where('event_id', '=', id)
      .execute();
    const entry = {
      id: 'aud_legacy',
      event_id: id,
      timestamp: res.data.data.event.timestamp as string,
      action: 'event_emitted',
      actor: 'legacy-actor',
      details: JSON.stringify({ source: 'api', sequence: 1 }),
    };
    await db.insertInto('event_audit').values(entry).execute();
    const audit = await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin });
    expect(audit.data.data.audit_trail).toEqual([
      {
        timestamp: entry.timestamp,
        action: 'event_emitted',
        actor: 'legacy-actor',
        details: { source: 'api', sequence: 1 },
      },
    ]);
  });

  it('shows a delivery made before attempts carried their audit facts once, from its own audit row', async () => {
    // Attempts recorded before migration 0013 have no actor; their audit entry is an event_audit row.
    const res = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { event_type: 'stat.sent' },
    });
    const id = res.data.data.event.event_id as string;
    const at = res.data.data.event.timestamp as string;
    const db = t.platform.context.database.db;
    const sub = await t.request('POST', '/api/v1/webhooks', {
      token: admin,
      body: { url: 'https://hooks.example.com/legacy', events: ['nothing.matches'] },
    });
    const subscriptionId = sub.data.data.webhook.id as string;
    await db
      .insertInto('event_outbox')
      .values({
        id: 'dlv_legacy',
        event_id: id,
        subscription_id: subscriptionId,
        sequence: 1,
        priority: 5,
        status: 'delivered',
        attempts: 1,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      })
      .execute();
    await db
      .insertInto('delivery_attempts')
      .values({
        id: 'att_legacy',
        outbox_id: 'dlv_legacy',
        event_id: id,
        subscription_id: subscriptionId,
        attempt: 1,
        status: 'delivered',
        response_status: 200,
        latency_ms: 3,
        error: null,
        created_at: at,
        batch_id: null,
        actor: null,
        next_attempt_at: null,
        replay_id: null,
      })
      .execute();
    const details = { subscription_id: subscriptionId, delivery_id: 'dlv_legacy', attempt: 1 };
    await db
      .insertInto('event_audit')
      .values({
        id: 'aud_legacy_delivery',
        event_id: id,
        timestamp: at,
        action: 'event_delivered',
        actor: 'webhook_dispatcher',
        details: JSON.stringify(details),
      })
      .execute();
    const audit = await t.request('GET', `/api/v1/events/${id}/audit`, { token: admin });
    expect(audit.data.data.audit_trail.map((e: { action: string }) => e.action)).toEqual([
      'event_emitted',
      'event_delivered',
    ]);
    expect(audit.data.data.audit_trail[1]).toMatchObject({ actor: 'webhook_dispatcher', details });
  });
});

describe('platform events', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });

  it('stores the platform’s own events (auth.login, system.config.updated) as queryable events', async () => {
    const admin = await t.adminToken();
    const change = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 5000 } } },
    });
    expect(change.statusCode).toBe(200);
    const find = async (type: string) => {
      for (let i = 0; i < 50; i++) {
        const res = await t.request('GET', `/api/v1/events?event_type=${type}`, { token: admin });
        if (res.data.data.events.length > 0) return res.data.data.events;
        await new Promise((r) => setTimeout(r, 20));
      }
      return [];
    };
    const logins = await find('auth.login');
    expect(logins[0]).toMatchObject({ event_type: 'auth.login', source: 'auth' });
    const updates = await find('system.config.updated');
    expect(updates[0]).toMatchObject({ event_type: 'system.config.updated', source: 'system' });
    expect(updates[0].metadata.request_id).toBe(change.data.request_id);
    const detail = await t.request('GET', `/api/v1/events/${updates[0].event_id}`, { token: admin });
    expect(detail.data.data.event.data.updated_keys).toContain('rate_limits.authenticated.max');
  });
});
