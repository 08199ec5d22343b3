import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { untilListening } from '../helpers/cluster-sync.js';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const BLOCK = '/api/v1/admin/security/block-ip';
const LIST = '/api/v1/admin/security/blocked-ips';

describe('blocked IP addresses', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const block = (body: Record<string, unknown>, remoteAddress?: string) =>
    t.request('POST', BLOCK, { token: admin, body, ...(remoteAddress ? { remoteAddress } : {}) });
  const statusFrom = async (remoteAddress: string) =>
    (await t.request('GET', '/api/v1/health', { remoteAddress })).statusCode;

  it('refuses a blocked address with 403 ip_blocked before any other work', async () => {
    const res = await block({ ip_address: '203.0.113.7', reason: 'credential stuffing' });
    expect(res.statusCode).toBe(201);
    expect(res.data.data.blocked_ip).toMatchObject({
      ip_address: '203.0.113.7',
      cidr: '203.0.113.7/32',
      reason: 'credential stuffing',
      blocked_by: 'admin',
      expires_at: null,
    });
    const refused = await t.request('GET', '/api/v1/health', { remoteAddress: '203.0.113.7' });
    expect(refused.statusCode).toBe(403);
    expect(refused.data).toMatchObject({
      success: false,
      error: { code: 'AUTHORIZATION_DENIED', details: { reason: 'ip_blocked' } },
    });
    expect(refused.headers['x-request-id']).toBe(refused.data.request_id);
    // Credentials, bodies and rate limits are not even looked at.
    const withToken = await t.request('GET', '/api/v1/auth/me', {
      token: admin,
      remoteAddress: '203.0.113.7',
    });
    expect(withToken.data.error.details.reason).toBe('ip_blocked');
    expect(withToken.headers['x-ratelimit-limit']).toBeUndefined();
    const badJson = await t.request('POST', '/api/v1/auth/login', {
      remoteAddress: '203.0.113.7',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(badJson.statusCode).toBe(403);
    expect(await statusFrom('203.0.113.8')).toBe(200);
  });

  it('blocks CIDR ranges, lists them, and unblocks a URL-encoded range', async () => {
    expect((await block({ ip_address: '198.51.100.0/24', duration_hours: 0 })).statusCode).toBe(201);
    expect(await statusFrom('198.51.100.77')).toBe(403);
    expect(await statusFrom('198.51.101.1')).toBe(200);
    const list = await t.request('GET', LIST, { token: admin });
    expect(list.statusCode).toBe(200);
    const entry = list.data.data.blocked_ips.find((e: { cidr: string }) => e.cidr === '198.51.100.0/24');
    expect(entry).toMatchObject({ ip_address: '198.51.100.0/24', expires_at: null });
    expect(list.data.data.pagination).toMatchObject({ page: 1, per_page: 20 });

    const removed = await t.request('DELETE', `${LIST}/198.51.100.0%2F24`, { token: admin });
    expect(removed.statusCode).toBe(200);
    expect(removed.data.success).toBe(true);
    expect(await statusFrom('198.51.100.77')).toBe(200);
    const again = await t.request('DELETE', `${LIST}/198.51.100.0%2F24`, { token: admin });
    expect(again.statusCode).toBe(404);
    expect(again.data.error.code).toBe('RESOURCE_NOT_FOUND');
    const invalid = await t.request('DELETE', `${LIST}/not-an-address`, { token: admin });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.data.error.details.field).toBe('ip');
  });

  it('stores a range in one canonical spelling', async () => {
    const res = await block({ ip_address: '192.0.2.77/28' });
    expect(res.data.data.blocked_ip.cidr).toBe('192.0.2.64/28');
    const update = await block({ ip_address: '192.0.2.64/28', reason: 'updated' });
    expect(update.statusCode).toBe(200);
    expect(update.data.data.blocked_ip.reason).toBe('updated');
    expect((await t.request('DELETE', `${LIST}/192.0.2.70%2F28`, { token: admin })).statusCode).toBe(200);
  });

  it('matches IPv4-mapped IPv6 addresses and IPv6 ranges', async () => {
    await block({ ip_address: '203.0.113.9' });
    expect(await statusFrom('::ffff:203.0.113.9')).toBe(403);
    const mapped = await block({ ip_address: '::ffff:192.0.2.128/121' });
    expect(mapped.data.data.blocked_ip.cidr).toBe('192.0.2.128/25');
    expect(await statusFrom('192.0.2.200')).toBe(403);
    expect(await statusFrom('::ffff:192.0.2.201')).toBe(403);
    expect(await statusFrom('192.0.2.100')).toBe(200);
    await block({ ip_address: '2001:db8:abcd::/48' });
    expect(await statusFrom('2001:db8:abcd:12::1')).toBe(403);
    expect(await statusFrom('2001:db8:abce::1')).toBe(200);
  });

  it('refuses to block the caller’s own address without force, and blocks it with force', async () => {
    const refused = await block({ ip_address: '127.0.0.0/8' });
    expect(refused.statusCode).toBe(409);
    expect(refused.data.error).toMatchObject({ code: 'RESOURCE_CONFLICT', details: { field: 'ip_address' } });
    expect(await statusFrom('127.0.0.1')).toBe(200);

    const forced = await block({ ip_address: '127.0.0.1', force: true, duration_hours: 1 });
    expect(forced.statusCode).toBe(201);
    expect(await statusFrom('127.0.0.1')).toBe(403);
    // Lifted from another address.
    const lifted = await t.request('DELETE', `${LIST}/127.0.0.1`, {
      token: admin,
      remoteAddress: '192.0.2.1',
    });
    expect(lifted.statusCode).toBe(200);
    expect(await statusFrom('127.0.0.1')).toBe(200);
  });

  it('ends a block after duration_hours', async () => {
    const key = (
      await t.request('POST', '/api/v1/auth/api-keys', { token: admin, body: { name: 'security' } })
    ).data.data.key;
    const res = await block({ ip_address: '203.0.113.200', duration_hours: 2 });
    const expiresAt = Date.parse(res.data.data.blocked_ip.expires_at);
    expect(Math.abs(expiresAt - (Date.now() + 2 * 3_600_000))).toBeLessThan(10_000);
    expect(await statusFrom('203.0.113.200')).toBe(403);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 3_600_000 + 1000);
    expect(await statusFrom('203.0.113.200')).toBe(200);
    const list = await t.request('GET', LIST, { apiKey: key });
    expect(list.data.data.blocked_ips.map((e: { cidr: string }) => e.cidr)).not.toContain('203.0.113.200/32');
  });

  it('treats a block whose time ran out as gone: blocking again creates one (201), removing it is 404', async () => {
    const key = (
      await t.request('POST', '/api/v1/auth/api-keys', { token: admin, body: { name: 'security-expired' } })
    ).data.data.key;
    expect((await block({ ip_address: '203.0.113.210', duration_hours: 1 })).statusCode).toBe(201);
    expect((await block({ ip_address: '203.0.113.211', duration_hours: 1 })).statusCode).toBe(201);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 3_600_000 + 1000);
    expect(await statusFrom('203.0.113.210')).toBe(200);
    const again = await t.request('POST', BLOCK, { apiKey: key, body: { ip_address: '203.0.113.210' } });
    expect(again.statusCode).toBe(201);
    expect(again.data.data.blocked_ip.expires_at).toBeNull();
    expect(await statusFrom('203.0.113.210')).toBe(403);
    const gone = await t.request('DELETE', `${LIST}/203.0.113.211`, { apiKey: key });
    expect(gone.statusCode).toBe(404);
    expect(gone.data.error.code).toBe('RESOURCE_NOT_FOUND');
    expect((await t.request('DELETE', `${LIST}/203.0.113.210`, { apiKey: key })).statusCode).toBe(200);
  });

  it('raises a security alert for admins when notify_admins is true, and none otherwise', async () => {
    await block({ ip_address: '203.0.113.41', reason: 'quiet block' });
    await block({ ip_address: '203.0.113.42', reason: 'tell the team', notify_admins: true });
    const res = await t.request('GET', '/api/v1/admin/security/alerts?type=ip_blocked', { token: admin });
    expect(res.statusCode).toBe(200);
    const alerts = res.data.data.alerts as { affected_resources: string[]; description: string }[];
    expect(alerts.map((a) => a.affected_resources)).toContainEqual(['ip:203.0.113.42']);
    expect(alerts.find((a) => a.affected_resources.includes('ip:203.0.113.42'))?.description).toBe(
      'tell the team',
    );
    expect(alerts.flatMap((a) => a.affected_resources)).not.toContain('ip:203.0.113.41');
  });

  it('writes audit entries and announces security.ip_blocked', async () => {
    const seen: { type: string; data: Record<string, unknown> }[] = [];
    const stop = t.platform.context.events.on('platform.event', (e) => seen.push(e));
    await block({ ip_address: '203.0.113.31', reason: 'scanner', duration_hours: 3, notify_admins: true });
    await t.request('DELETE', `${LIST}/203.0.113.31`, { token: admin });
    stop();
    const announced = seen.find((e) => e.type === 'security.ip_blocked');
    expect(announced?.data).toMatchObject({
      ip_address: '203.0.113.31',
      reason: 'scanner',
      blocked_by: 'admin',
      notify_admins: true,
    });
    const entries = await t.platform.context.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('resource_id', '=', '203.0.113.31/32')
      .orderBy('id')
      .execute();
    expect(entries.map((e) => e.action)).toEqual(['security.block_ip', 'security.unblock_ip']);
    expect(entries[0]).toMatchObject({
      admin_user: 'admin',
      resource_type: 'ip_address',
      ip_address: '127.0.0.1',
    });
    expect(JSON.parse(entries[0]!.details)).toMatchObject({
      reason: 'scanner',
      duration_hours: 3,
      notify_admins: true,
    });
  });

  it('validates the request', async () => {
    for (const body of [
      { ip_address: 'not-an-ip' },
      { ip_address: '10.0.0.1/33' },
      { ip_address: '127.1' },
      { ip_address: '10.0.0.1', duration_hours: -1 },
      { ip_address: '10.0.0.1', surprise: true },
      {},
    ]) {
      const res = await block(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('needs the admin role and the admin:security scope', async () => {
    const user = await t.createUser('not-security-admin');
    const asUser = await t.request('POST', BLOCK, {
      token: user.access,
      body: { ip_address: '203.0.113.99' },
    });
    expect(asUser.data.error.code).toBe('ADMIN_REQUIRED');
    const narrow = (
      await t.request('POST', '/api/v1/auth/api-keys', {
        token: admin,
        body: { name: 'system-only', scopes: ['admin:system'] },
      })
    ).data.data.key;
    const asNarrow = await t.request('GET', LIST, { apiKey: narrow });
    expect(asNarrow.statusCode).toBe(403);
    expect(asNarrow.data.error.code).toBe('INSUFFICIENT_ADMIN_PERMISSIONS');
  });
});

// Starting a second instance (and, in cluster mode, its connections) takes a while on a busy machine.
const MULTI_INSTANCE_MS = 30_000;

describe('blocked IP addresses across instances', () => {
  let a: TestPlatform;
  let b: TestPlatform | undefined;
  beforeAll(async () => {
    a = await startPlatform();
  }, MULTI_INSTANCE_MS);
  afterAll(async () => {
    await b?.close();
    await a.close();
  });

  it(
    'applies a block made on one instance on another',
    async () => {
      // Cluster mode: B already runs and hears of the block through Redis. Embedded mode is one process by
      // design, so a second one started afterwards loads the block from the database.
      if (a.backend === 'cluster') {
        b = await startPlatform({}, { storage: a.storage });
        await untilListening(a, b);
      }
      const res = await a.request('POST', BLOCK, {
        token: await a.adminToken(),
        body: { ip_address: '203.0.113.66' },
      });
      expect(res.statusCode).toBe(201);
      b ??= await startPlatform({}, { storage: a.storage });
      const other = b;
      const refused = await eventually(
        async () =>
          (await other.request('GET', '/api/v1/health', { remoteAddress: '203.0.113.66' })).statusCode ===
          403,
      );
      expect(refused).toBe(true);
    },
    MULTI_INSTANCE_MS,
  );
});
