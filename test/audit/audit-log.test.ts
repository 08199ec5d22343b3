import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

interface Entry {
  id: string;
  timestamp: string;
  admin_user: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  details: Record<string, unknown>;
  ip_address: string;
  user_agent: string;
}

describe('audit log', () => {
  let t: TestPlatform;
  let admin: string;
  let userId: string;
  let betweenTime: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    const created = await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: { username: 'audited', email: 'audited@example.test', password: 'long-enough-1' },
      headers: { 'user-agent': 'audit-test/1.0' },
    });
    userId = created.data.data.user.id;
    await new Promise((r) => setTimeout(r, 5));
    betweenTime = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    await t.request('POST', `/api/v1/admin/users/${userId}/suspend`, {
      token: admin,
      body: { reason: 'audit', duration_days: 1 },
    });
    await t.request('POST', '/api/v1/admin/security/block-ip', {
      token: admin,
      body: { ip_address: '198.51.100.9', reason: 'audit' },
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const list = async (query = '') => {
    const res = await t.request('GET', `/api/v1/admin/audit-log${query}`, { token: admin });
    expect(res.statusCode).toBe(200);
    return res.data.data as { audit_entries: Entry[]; pagination: Record<string, unknown> };
  };

  it('lists entries newest first with who, what, which resource and from where', async () => {
    const { audit_entries, pagination } = await list();
    expect(audit_entries.map((e) => e.action).slice(0, 3)).toEqual([
      'security.block_ip',
      'user.suspend',
      'user.create',
    ]);
    const created = audit_entries.find((e) => e.action === 'user.create');
    expect(created).toMatchObject({
      admin_user: 'admin',
      resource_type: 'user',
      resource_id: userId,
      ip_address: '127.0.0.1',
      user_agent: 'audit-test/1.0',
      details: { username: 'audited', roles: ['user'] },
    });
    expect(created?.id).toMatch(/^aud_/);
    expect(pagination).toMatchObject({ page: 1, per_page: 20, total: 3, has_prev: false });
  });

  it('filters by action (exact or prefix), admin user, resource and time', async () => {
    expect((await list('?action=user.suspend')).audit_entries.map((e) => e.action)).toEqual(['user.suspend']);
    expect((await list('?action=user.*')).audit_entries.map((e) => e.action)).toEqual([
      'user.suspend',
      'user.create',
    ]);
    expect((await list('?resource_type=ip_address')).audit_entries).toHaveLength(1);
    expect((await list(`?resource_id=${userId}`)).audit_entries).toHaveLength(2);
    expect((await list('?admin_user=admin')).pagination['total']).toBe(3);
    expect((await list('?admin_user=someone-else')).audit_entries).toEqual([]);
    expect((await list(`?start_time=${betweenTime}`)).audit_entries.map((e) => e.action)).toEqual([
      'security.block_ip',
      'user.suspend',
    ]);
    expect((await list(`?end_time=${betweenTime}`)).audit_entries.map((e) => e.action)).toEqual([
      'user.create',
    ]);
    expect((await list('?action=user_%')).audit_entries).toEqual([]);
  });

  it('pages through entries in either order', async () => {
    const first = await list('?per_page=2&order=asc');
    expect(first.audit_entries.map((e) => e.action)).toEqual(['user.create', 'user.suspend']);
    expect(first.pagination).toMatchObject({ total: 3, pages: 2, has_next: true });
    const second = await list('?per_page=2&page=2&order=asc');
    expect(second.audit_entries.map((e) => e.action)).toEqual(['security.block_ip']);
  });

  it('validates its filters and requires the admin role with admin:security', async () => {
    expect(
      (await t.request('GET', '/api/v1/admin/audit-log?per_page=500', { token: admin })).statusCode,
    ).toBe(422);
    expect(
      (await t.request('GET', '/api/v1/admin/audit-log?start_time=yesterday', { token: admin })).statusCode,
    ).toBe(422);
    const u = await t.createUser('audit-peeker', ['moderator']);
    const res = await t.request('GET', '/api/v1/admin/audit-log', { token: u.access });
    expect(res.statusCode).toBe(403);
    expect(res.data.error.code).toBe('ADMIN_REQUIRED');
  });
});
