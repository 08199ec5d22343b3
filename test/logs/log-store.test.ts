import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/kernel/new-id.js';
import type { LogStoreService } from '../../src/logs/log-store-service.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const logsOf = (t: TestPlatform) => t.platform.context.registry.get('log_store') as LogStoreService;

describe('log store and the system logs endpoint', () => {
  let t: TestPlatform;
  let admin: string;
  const stdout: string[] = [];
  beforeAll(async () => {
    t = await startPlatform(
      { logging: { level: 'info' } },
      { logStream: { write: (line: string) => void stdout.push(line) } },
    );
    admin = await t.adminToken();
    const log = t.platform.context.app.log.child({ component: 'billing-test' });
    log.info(
      { user_id: 'usr_billing', ip_address: '203.0.113.7', request_id: 'req_billing_1' },
      'invoice 17 sent',
    );
    log.warn({ order: 42 }, 'Payment RETRIED for order 42');
    log.error('payment failed for order 43 (100% declined)');
    log.debug('a debug line stays on stdout only');
    await logsOf(t).flush();
  });
  afterAll(async () => {
    await t.close();
  });

  const query = async (qs: string) => {
    const res = await t.request('GET', `/api/v1/admin/system/logs?${qs}`, { token: admin });
    expect(res.statusCode).toBe(200);
    return res.data.data as { logs: any[]; pagination: any };
  };

  it('stores a line logged through the platform logger with level, component and metadata', async () => {
    const { logs, pagination } = await query('component=billing-test');
    expect(pagination).toEqual({ page: 1, per_page: 50, total: 3, has_next: false });
    // Newest first.
    expect(logs.map((l) => l.level)).toEqual(['ERROR', 'WARNING', 'INFO']);
    const info = logs[2];
    expect(info).toMatchObject({
      component: 'billing-test',
      message: 'invoice 17 sent',
      metadata: { user_id: 'usr_billing', ip_address: '203.0.113.7', request_id: 'req_billing_1' },
    });
    expect(info.id).toMatch(/^log_/);
    expect(Date.parse(info.timestamp)).toBeGreaterThan(Date.now() - 60_000);
    expect(logs[1].metadata).toMatchObject({ order: 42, user_id: null, request_id: null });
  });

  it('filters by minimum level, searches case-insensitively and literally, and pages', async () => {
    expect((await query('component=billing-test&level=WARNING')).logs.map((l) => l.level)).toEqual([
      'ERROR',
      'WARNING',
    ]);
    expect((await query('component=billing-test&level=ERROR')).logs).toHaveLength(1);
    expect((await query('component=billing-test&level=DEBUG')).logs).toHaveLength(3);
    const found = await query('search=payment%20retried');
    expect(found.logs.map((l) => l.message)).toEqual(['Payment RETRIED for order 42']);
    // % is a literal character in the search, not a wildcard.
    expect((await query(`search=${encodeURIComponent('100%')}`)).logs).toHaveLength(1);
    expect((await query(`search=${encodeURIComponent('0%d')}`)).logs).toHaveLength(0);
    const page1 = await query('component=billing-test&per_page=2');
    expect(page1.pagination).toEqual({ page: 1, per_page: 2, total: 3, has_next: true });
    const page2 = await query('component=billing-test&per_page=2&page=2');
    expect(page2.logs.map((l) => l.level)).toEqual(['INFO']);
    expect(page2.pagination.has_next).toBe(false);
  });

  it('stores a line holding text PostgreSQL refuses (NUL, a lone surrogate) with it replaced, and the lines around it', async () => {
    const log = t.platform.context.app.log.child({ component: 'unstorable-test' });
    log.warn('before it');
    log.warn({ user_id: 'usr_\u0000x' }, 'NUL \u0000 and a lone \ud800 surrogate');
    // Cut at 8,192 characters between the two halves of a pair.
    log.warn(`${'a'.repeat(8191)}😀`);
    log.warn('after it');
    await logsOf(t).flush();
    const { logs } = await query('component=unstorable-test');
    expect(logs.map((l) => l.message)).toEqual([
      'after it',
      `${'a'.repeat(8191)}\ufffd…`,
      'NUL \ufffd and a lone \ufffd surrogate',
      'before it',
    ]);
  });

  it('filters by time range', async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await query(`component=billing-test&start_time=${future}`)).logs).toHaveLength(0);
    expect((await query(`component=billing-test&end_time=${future}`)).logs).toHaveLength(3);
    const past = new Date(Date.now() - 3_600_000).toISOString();
    expect((await query(`component=billing-test&end_time=${past}`)).logs).toHaveLength(0);
  });

  it('keeps per-request lines and DEBUG out of the store but on stdout', async () => {
    for (let i = 0; i < 3; i++) await t.request('GET', '/api/v1/health');
    await logsOf(t).flush();
    expect((await query('search=incoming%20request')).logs).toHaveLength(0);
    expect((await query('search=request%20completed')).logs).toHaveLength(0);
    expect((await query('search=debug%20line')).logs).toHaveLength(0);
    expect(stdout.some((l) => l.includes('"msg":"incoming request"'))).toBe(true);
    // Each request's lines carry its id (the per-request child logger, made when the request logs).
    await t.request('GET', '/api/v1/health', { headers: { 'x-request-id': 'req-lines-carry-me' } });
    const mine = () => stdout.filter((l) => l.includes('"reqId":"req-lines-carry-me"'));
    await eventually(async () => mine().length >= 2, 2000);
    expect(mine().map((l) => JSON.parse(l).msg)).toEqual(['incoming request', 'request completed']);
    expect(stdout.some((l) => l.includes('"msg":"invoice 17 sent"'))).toBe(true);
    // logging.level is info: the DEBUG line went nowhere.
    expect(stdout.some((l) => l.includes('a debug line'))).toBe(false);
  });

  it('redacts secrets in the stored records as on stdout', async () => {
    t.platform.context.app.log
      .child({ component: 'secrets-test' })
      .info(
        { password: 'hunter2-secret', nested: { token: 'tok-secret-value' }, api_key: 'plat_abc' },
        'login attempt',
      );
    await logsOf(t).flush();
    const res = await t.request('GET', '/api/v1/admin/system/logs?component=secrets-test', { token: admin });
    expect(res.body).not.toContain('hunter2-secret');
    expect(res.body).not.toContain('tok-secret-value');
    expect(res.body).not.toContain('plat_abc');
    expect(res.data.data.logs[0].metadata).toMatchObject({
      password: '[REDACTED]',
      nested: { token: '[REDACTED]' },
      api_key: '[REDACTED]',
    });
    const line = stdout.find((l) => l.includes('login attempt'));
    expect(line).toBeDefined();
    expect(line).not.toContain('hunter2-secret');
  });

  it('redacts every credential a client puts in a query string, whatever its name or encoding', async () => {
    const qs = 'password=pw-in-query-1&client_secret=cs-in-query-2&%70asswd=pw-in-query-3&refresh_token=rt-4';
    await t.request('GET', `/api/v1/health?resolution=1m&${qs}`, {
      headers: { 'x-request-id': 'req-query-secrets' },
    });
    const mine = () => stdout.filter((l) => l.includes('"reqId":"req-query-secrets"'));
    await eventually(async () => mine().length >= 1, 2000);
    const url = JSON.parse(mine()[0]!).req.url as string;
    for (const secret of ['pw-in-query-1', 'cs-in-query-2', 'pw-in-query-3', 'rt-4']) {
      expect(url).not.toContain(secret);
    }
    expect(url).toContain('resolution=1m');
    expect(url).toContain('password=[REDACTED]');
  });

  it('shows e-mails the mailer logged without SMTP, without the password', async () => {
    const res = await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: {
        username: 'mail-log-user',
        email: 'mail-log-user@example.test',
        password: 'mail-log-password-1',
        send_welcome_email: true,
      },
    });
    expect(res.statusCode).toBe(201);
    await logsOf(t).flush();
    const found = await t.request('GET', '/api/v1/admin/system/logs?component=mailer&level=INFO', {
      token: admin,
    });
    expect(found.statusCode).toBe(200);
    const mails = found.data.data.logs.filter((l: any) => l.message.includes('mail-log-user@example.test'));
    expect(mails).toHaveLength(1);
    expect(mails[0].level).toBe('INFO');
    expect(found.body).not.toContain('mail-log-password-1');
  });

  it('removes records older than logging.retention_days', async () => {
    const old = new Date(Date.now() - 20 * 86_400_000).toISOString();
    const row = {
      timestamp: old,
      level: 'INFO',
      level_value: 30,
      component: 'retention-test',
      request_id: null,
      user_id: null,
      ip_address: null,
      metadata: '{}',
    };
    await logsOf(t).insert([
      { ...row, id: newId('log'), message: 'twenty days old' },
      { ...row, id: newId('log'), message: 'recent', timestamp: new Date().toISOString() },
    ]);
    expect((await query('component=retention-test')).pagination.total).toBe(2);
    expect(await logsOf(t).applyRetention()).toBeGreaterThanOrEqual(1);
    expect((await query('component=retention-test')).logs.map((l) => l.message)).toEqual(['recent']);
  });

  it('keeps the store where the deployment mode says', async () => {
    const dataDir = (t.storage['storage'] as { data_dir: string }).data_dir;
    if (t.backend === 'sqlite') {
      expect(logsOf(t).kind).toBe('sqlite');
      expect(existsSync(join(dataDir, 'logs.db'))).toBe(true);
      // The main database's table stays empty: the records live in their own file.
      const main = await t.platform.context.database.db.selectFrom('log_entries').selectAll().execute();
      expect(main).toHaveLength(0);
    } else {
      expect(logsOf(t).kind).toBe('postgres');
      const rows = await t.platform.context.database.db
        .selectFrom('log_entries')
        .select('message')
        .where('component', '=', 'billing-test')
        .execute();
      expect(rows).toHaveLength(3);
    }
  });

  it('refuses bad filters with 422 and non-admins with 403', async () => {
    for (const qs of ['per_page=201', 'level=TRACE', 'page=0', 'start_time=soon', 'unknown=1']) {
      const res = await t.request('GET', `/api/v1/admin/system/logs?${qs}`, { token: admin });
      expect(res.statusCode, qs).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
    }
    const inverted = await t.request(
      'GET',
      `/api/v1/admin/system/logs?start_time=${new Date().toISOString()}&end_time=2020-01-01T00:00:00Z`,
      { token: admin },
    );
    expect(inverted.statusCode).toBe(422);
    const user = await t.createUser('logs-moderator', ['moderator']);
    const denied = await t.request('GET', '/api/v1/admin/system/logs', { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error.code).toBe('ADMIN_REQUIRED');
  });

  it('reports itself as the log_store service with measured figures', async () => {
    const res = await t.request('GET', '/api/v1/status', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.components.log_store.status).toBe('healthy');
    expect(res.data.data.components.log_store.records_written).toBeGreaterThanOrEqual(3);
    expect(res.data.data.components.cache.status).toBe('healthy');
    expect(res.data.data.components.cache.memory_usage).toMatch(/MB$/);
    expect(res.data.data.components.metrics_collector.status).toBe('healthy');
  });
});
