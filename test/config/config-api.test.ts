import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const SMTP_URL = 'smtp://u:p@127.0.0.1:2525';

describe('configuration API', () => {
  let t: TestPlatform;
  let admin: string;
  const announced: PlatformEventMap['platform.event'][] = [];

  beforeAll(async () => {
    t = await startPlatform({}, { env: { PLATFORM__MAIL__SMTP_URL: SMTP_URL } });
    admin = await t.adminToken();
    t.platform.context.events.on('platform.event', (e) => announced.push(e));
  });
  afterAll(async () => {
    await t.close();
  });

  const version = async () => {
    const res = await t.request('GET', '/api/v1/admin/config', { token: admin });
    return Number(res.data.data.metadata.config_version);
  };

  it('masks every secret that has a value and leaves empty secrets empty', async () => {
    const res = await t.request('GET', '/api/v1/config', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.data.success).toBe(true);
    expect(res.data.data.mail.smtp_url).toBe('********');
    expect(res.data.data.backups.encryption_key).toBe('');
    // cluster runs carry a PostgreSQL and a Redis URL, embedded runs none
    expect(res.data.data.database.url).toBe(t.backend === 'cluster' ? '********' : '');
    expect(res.body).not.toContain('u:p@');
    expect(res.data.data.server).toMatchObject({ host: '127.0.0.1', environment: 'test' });
  });

  it('shows secrets with mask_secrets=false to an admin and refuses everyone else', async () => {
    const res = await t.request('GET', '/api/v1/config?mask_secrets=false', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.mail.smtp_url).toBe(SMTP_URL);
    const moderator = await t.createUser('config-moderator', ['moderator']);
    const refused = await t.request('GET', '/api/v1/config?mask_secrets=false', { token: moderator.access });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error.code).toBe('AUTHORIZATION_DENIED');
    expect(refused.body).not.toContain('u:p@');
  });

  it('filters one section with ?section= and refuses an unknown section', async () => {
    const res = await t.request('GET', '/api/v1/config?section=rate_limits', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.data.data)).toEqual(['rate_limits']);
    expect(res.data.data.rate_limits.authenticated).toHaveProperty('window_seconds');
    const admin2 = await t.request('GET', '/api/v1/admin/config?section=mail', { token: admin });
    expect(Object.keys(admin2.data.data.config)).toEqual(['mail']);
    const bad = await t.request('GET', '/api/v1/config?section=nope', { token: admin });
    expect(bad.statusCode).toBe(422);
    expect(bad.data.error.code).toBe('VALIDATION_ERROR');
  });

  it('reports updated keys as dotted paths, restart_required per key, and a new config_version', async () => {
    const before = await version();
    const hot = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 50_000 } } },
    });
    expect(hot.statusCode).toBe(200);
    expect(hot.data.data).toMatchObject({
      updated_keys: ['rate_limits.authenticated.max'],
      restart_required: false,
    });
    expect(Number(hot.data.data.config_version)).toBe(before + 1);

    const restart = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { server: { port: 9123 } },
    });
    expect(restart.statusCode).toBe(200);
    expect(restart.data.data).toMatchObject({ updated_keys: ['server.port'], restart_required: true });
    expect(Number(restart.data.data.config_version)).toBe(before + 2);

    const meta = await t.request('GET', '/api/v1/admin/config', { token: admin });
    expect(meta.data.data.config.server.port).toBe(9123);
    expect(meta.data.data.metadata).toMatchObject({
      updated_by: 'admin',
      config_version: String(before + 2),
    });
    expect(Date.parse(meta.data.data.metadata.last_updated)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('accepts PATCH and the admin PUT, and a value that is already in effect changes nothing', async () => {
    const before = await version();
    const patch = await t.request('PATCH', '/api/v1/config', {
      token: admin,
      body: { 'events.retention_days': 12 },
    });
    expect(patch.data.data.updated_keys).toEqual(['events.retention_days']);
    const same = await t.request('PUT', '/api/v1/admin/config', {
      token: admin,
      body: { events: { retention_days: 12 } },
    });
    expect(same.statusCode).toBe(200);
    expect(same.data.data).toMatchObject({ updated_keys: [], restart_required: false });
    expect(same.data.data.metadata.config_version).toBe(String(before + 1));
  });

  it('accepts the whole GET result sent back unchanged, boot-only keys and masked secrets included', async () => {
    const before = await version();
    const current = await t.request('GET', '/api/v1/config', { token: admin });
    const res = await t.request('PUT', '/api/v1/config', { token: admin, body: current.data.data });
    expect(res.statusCode).toBe(200);
    expect(res.data.data).toMatchObject({ updated_keys: [], restart_required: false });
    expect(await version()).toBe(before);
    const shown = await t.request('GET', '/api/v1/config?mask_secrets=false&section=mail', { token: admin });
    expect(shown.data.data.mail.smtp_url).toBe(SMTP_URL);
  });

  it('removes a runtime change when a key is set to null', async () => {
    await t.request('PUT', '/api/v1/config', { token: admin, body: { mail: { from: 'Ops <ops@x.test>' } } });
    const reset = await t.request('PUT', '/api/v1/config', { token: admin, body: { mail: { from: null } } });
    expect(reset.data.data.updated_keys).toEqual(['mail.from']);
    const res = await t.request('GET', '/api/v1/config?section=mail', { token: admin });
    expect(res.data.data.mail.from).toBe('Platform <platform@localhost>');
  });

  it('keeps a secret unchanged when the mask is written back, and changes it when a value is sent', async () => {
    const before = await version();
    const masked = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { mail: { smtp_url: '********' } },
    });
    expect(masked.statusCode).toBe(200);
    expect(masked.data.data.updated_keys).toEqual([]);
    expect(await version()).toBe(before);
    const shown = await t.request('GET', '/api/v1/admin/config?section=mail&include_secrets=true', {
      token: admin,
    });
    expect(shown.data.data.config.mail.smtp_url).toBe(SMTP_URL);

    const changed = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { mail: { smtp_url: 'smtp://other@127.0.0.1:2626' } },
    });
    expect(changed.data.data.updated_keys).toEqual(['mail.smtp_url']);
    const again = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { mail: { smtp_url: '********', from: 'Platform <platform@localhost>' } },
    });
    expect(again.data.data.updated_keys).toEqual([]);
    const after = await t.request('GET', '/api/v1/admin/config?section=mail&include_secrets=true', {
      token: admin,
    });
    expect(after.data.data.config.mail.smtp_url).toBe('smtp://other@127.0.0.1:2626');
    const maskedView = await t.request('GET', '/api/v1/admin/config?section=mail', { token: admin });
    expect(maskedView.data.data.config.mail.smtp_url).toBe('********');
  });

  it('lists every problem of an invalid change at once and writes nothing', async () => {
    const before = await version();
    const res = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: {
        rate_limits: { authenticated: { max: 7 } },
        server: { port: 'eighty', nope: 1 },
        events: { retention_days: -1 },
        logging: { level: 'loud' },
        database: { pool_max: 99 },
        storage: { data_dir: '/elsewhere' },
        redis: { url: 'redis://127.0.0.1:1' },
        unknown_section: { x: 1 },
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.data.success).toBe(false);
    expect(res.data.error.code).toBe('CONFIG_VALIDATION_ERROR');
    const fields = (res.data.error.details.errors as { field: string; reason: string }[]).map((e) => e.field);
    expect(fields.sort()).toEqual(
      [
        'database.pool_max',
        'events.retention_days',
        'logging.level',
        'redis.url',
        'server.nope',
        'server.port',
        'storage.data_dir',
        'unknown_section',
      ].sort(),
    );
    expect(res.data.error.details.field).toBeTypeOf('string');
    expect(res.data.error.details.reason).toBeTypeOf('string');
    expect(res.body).not.toContain('redis://127.0.0.1:1');
    expect(await version()).toBe(before);
    const cfg = await t.request('GET', '/api/v1/config?section=rate_limits', { token: admin });
    expect(cfg.data.data.rate_limits.authenticated.max).not.toBe(7);
  });

  it('refuses __proto__, constructor and prototype keys with CONFIG_VALIDATION_ERROR', async () => {
    const before = await version();
    const res = await t.request('PUT', '/api/v1/config', {
      token: admin,
      headers: { 'content-type': 'application/json' },
      body: '{"__proto__": {"polluted": true}, "server": {"constructor": {"prototype": {"x": 1}}}, "mail": {"prototype": 1}, "events.__proto__": 1}',
    });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.code).toBe('CONFIG_VALIDATION_ERROR');
    const fields = (res.data.error.details.errors as { field: string }[]).map((e) => e.field).sort();
    expect(fields).toEqual(['__proto__', 'events.__proto__', 'mail.prototype', 'server.constructor']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(await version()).toBe(before);
  });

  it('answers malformed JSON and a non-object body with a 400 in the envelope', async () => {
    const bad = await t.request('PUT', '/api/v1/config', {
      token: admin,
      headers: { 'content-type': 'application/json' },
      body: '{"server": ',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.data.error.code).toBe('VALIDATION_ERROR');
    const array = await t.request('PUT', '/api/v1/config', { token: admin, body: [1, 2] });
    expect([400, 422]).toContain(array.statusCode);
    expect(array.data.success).toBe(false);
  });

  it('announces system.config.updated and writes an audit entry for every change', async () => {
    announced.length = 0;
    const res = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { cache: { default_ttl_seconds: 123 } },
      headers: { 'x-request-id': 'req-config-audit-1' },
    });
    expect(res.statusCode).toBe(200);
    const event = announced.find((e) => e.type === 'system.config.updated');
    expect(event).toMatchObject({
      source: 'system',
      data: {
        updated_keys: ['cache.default_ttl_seconds'],
        restart_required: false,
        config_version: res.data.data.config_version,
      },
      actor: { username: 'admin' },
      requestId: 'req-config-audit-1',
    });
    const rows = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'config.update')
      .where('resource_id', '=', res.data.data.config_version)
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ admin_user: 'admin', resource_type: 'config' });
    expect(JSON.parse(rows[0]!.details)).toMatchObject({ updated_keys: ['cache.default_ttl_seconds'] });
  });

  it('requires admin:config: a user gets 403 and an anonymous caller 401', async () => {
    const user = await t.createUser('config-user');
    const put = await t.request('PUT', '/api/v1/config', {
      token: user.access,
      body: { cache: { default_ttl_seconds: 5 } },
    });
    expect(put.statusCode).toBe(403);
    expect(put.data.error.code).toBe('AUTHORIZATION_DENIED');
    const adminPath = await t.request('GET', '/api/v1/admin/config', { token: user.access });
    expect(adminPath.data.error.code).toBe('ADMIN_REQUIRED');
    const anonymous = await t.request('GET', '/api/v1/config');
    expect(anonymous.statusCode).toBe(401);
  });

  it('shows a change made through one instance on another instance of the same storage', async () => {
    // Cluster instances hear of a change over Redis while they run. Embedded mode is one process; a second
    // instance on the same SQLite file reads the stored change when it starts.
    const early = t.backend === 'cluster' ? await startPlatform({}, { storage: t.storage }) : undefined;
    try {
      const res = await t.request('PUT', '/api/v1/config', {
        token: admin,
        body: { events: { max_payload_bytes: 300_000 } },
      });
      expect(res.statusCode).toBe(200);
      const b = early ?? (await startPlatform({}, { storage: t.storage }));
      try {
        const token = await b.adminToken();
        const deadline = Date.now() + 5000;
        let seen: unknown;
        while (Date.now() < deadline) {
          const got = await b.request('GET', '/api/v1/config?section=events', { token });
          seen = got.data.data.events.max_payload_bytes;
          if (seen === 300_000) break;
          await new Promise((r) => setTimeout(r, 25));
        }
        expect(seen).toBe(300_000);
        const meta = await b.request('GET', '/api/v1/admin/config', { token });
        expect(meta.data.data.metadata.config_version).toBe(res.data.data.config_version);
      } finally {
        if (!early) await b.close();
      }
    } finally {
      await early?.close();
    }
  });
});

describe('configuration changes take effect without a restart', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });

  it('lowering rate_limits.authenticated.max makes the next requests hit 429', async () => {
    const user = await t.createUser('limited');
    const first = await t.request('GET', '/api/v1/auth/me', { token: user.access });
    expect(first.headers['x-ratelimit-limit']).toBe('100000');
    const admin = await t.adminToken();
    const put = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 3 } } },
    });
    expect(put.data.data).toEqual({
      updated_keys: ['rate_limits.authenticated.max'],
      restart_required: false,
      config_version: '1',
    });
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<TestPlatform['request']>> | undefined;
    for (let i = 0; i < 4; i++) {
      const res = await t.request('GET', '/api/v1/auth/me', { token: user.access });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) limited = res;
      expect(res.headers['x-ratelimit-limit']).toBe('3');
    }
    // The request made before the change counts in the same window: 3 allowed in all, so the third
    // request after the change is refused (the fourth at the latest, should the hour turn meanwhile).
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses[3]).toBe(429);
    expect(limited?.data.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(limited?.data.error.retry_after).toBeGreaterThan(0);
  });
});
